package main

import (
	"encoding/json"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"
)

func loadVersionTable(t *testing.T) *versionsSpec {
	t.Helper()
	var sp versionsSpec
	if err := decodeStrict(harnessFS, "harness/versions.json", &sp); err != nil {
		t.Fatal(err)
	}
	return &sp
}

// TestVersionTable reads harness/versions.json against the harness: the
// versions run in order up to VERSION, every area a part names that exists
// has cases, every tool file is named by some version, and the version
// lembas announces is exactly the highest one whose evidence is all here —
// with what the next one still lacks logged, so the gap is visible.
func TestVersionTable(t *testing.T) {
	sp := loadVersionTable(t)
	if len(sp.Versions) == 0 {
		t.Fatal("versions.json lists no version")
	}
	prev := ""
	named := map[string]bool{}
	for _, v := range sp.Versions {
		if prev != "" && !semverLess(prev, v.Version) {
			t.Errorf("versions out of order: %s after %s", v.Version, prev)
		}
		prev = v.Version
		if len(v.Parts) == 0 {
			t.Errorf("%s lists no part", v.Version)
		}
		for _, p := range v.Parts {
			if len(p.Areas)+len(p.Tools)+len(p.Files) == 0 {
				t.Errorf("%s %q names no evidence", v.Version, p.Part)
			}
			for _, tool := range p.Tools {
				named[tool] = true
			}
			for _, a := range p.Areas {
				data, err := fs.ReadFile(harnessFS, "harness/conformance/"+a+".json")
				if err != nil {
					continue // not built yet: the version stays below
				}
				var f conformanceFile
				if json.Unmarshal(data, &f) != nil || len(f.Cases) == 0 {
					t.Errorf("%s: area %s has no cases, so it is no evidence", v.Version, a)
				}
			}
		}
	}
	b, _ := fs.ReadFile(harnessFS, "harness/VERSION")
	if last := sp.Versions[len(sp.Versions)-1].Version; last != strings.TrimSpace(string(b)) {
		t.Errorf("the table ends at %s, VERSION says %s", last, strings.TrimSpace(string(b)))
	}
	tools, _ := fs.Glob(harnessFS, "harness/tools/*.json")
	for _, p := range tools {
		name := strings.TrimSuffix(strings.TrimPrefix(p, "harness/tools/"), ".json")
		if strings.Contains(name, ".") {
			continue // a tool's texts (apply_patch.texts.json)
		}
		if !named[name] {
			t.Errorf("tool %s is named by no version in versions.json", name)
		}
	}
	got, want := harnessVersion(), builtVersion(sp, harnessFS.FS)
	if got != want {
		t.Errorf("announced %s, the evidence says %s", got, want)
	}
	for _, v := range sp.Versions {
		if !semverLess(got, v.Version) {
			continue
		}
		for _, p := range v.Parts {
			if m := p.missing(harnessFS.FS, conformanceAreas(harnessFS.FS)); len(m) > 0 {
				t.Logf("%s is not announced: %q lacks %s", v.Version, p.Part, strings.Join(m, ", "))
			}
		}
		break
	}
}

// TestBuiltVersionRises: the announced version stops at the first version
// with missing evidence, and rises by itself when that evidence lands.
func TestBuiltVersionRises(t *testing.T) {
	sp := &versionsSpec{}
	json.Unmarshal([]byte(`{"versions":[
		{"version":"1.0.0","parts":[{"part":"a","files":["a.md"]}]},
		{"version":"1.1.0","parts":[{"part":"b","areas":["b"]},{"part":"c","tools":["c"]}]},
		{"version":"2.0.0","parts":[{"part":"d","files":["d.md"]}]}]}`), sp)
	fsys := fstest.MapFS{}
	if v := builtVersion(sp, fsys); v != "0.0.0" {
		t.Errorf("nothing built: %s", v)
	}
	fsys["harness/a.md"] = &fstest.MapFile{}
	fsys["harness/d.md"] = &fstest.MapFile{} // a later version's evidence does not skip the gap
	fsys["harness/conformance/areas.txt"] = &fstest.MapFile{Data: []byte("a\nb\n")}
	if v := builtVersion(sp, fsys); v != "1.0.0" {
		t.Errorf("1.1.0 lacks tool c: %s", v)
	}
	fsys["harness/tools/c.json"] = &fstest.MapFile{}
	if v := builtVersion(sp, fsys); v != "2.0.0" {
		t.Errorf("all built: %s", v)
	}
}

// TestBuiltVersionFolded: a part naming a folded tool's former names is
// built only while the tool's file keeps them as aliases.
func TestBuiltVersionFolded(t *testing.T) {
	sp := &versionsSpec{}
	json.Unmarshal([]byte(`{"versions":[{"version":"1.0.0","parts":[{"part":"a","tools":["job"],"aliases":{"job":["job_list","job_stop"]}}]}]}`), sp)
	fsys := fstest.MapFS{"harness/tools/job.json": &fstest.MapFile{Data: []byte(`{"aliases":{"cli":["job_list"]}}`)}}
	if v := builtVersion(sp, fsys); v != "0.0.0" {
		t.Errorf("job_stop is no alias of job, yet %s", v)
	}
	fsys["harness/tools/job.json"] = &fstest.MapFile{Data: []byte(`{"aliases":{"cli":["job_list","job_stop"]}}`)}
	if v := builtVersion(sp, fsys); v != "1.0.0" {
		t.Errorf("both aliases kept: %s", v)
	}
}

// semverLess compares two x.y.z versions.
func semverLess(a, b string) bool {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < 3 && i < len(pa) && i < len(pb); i++ {
		var x, y int
		for _, c := range pa[i] {
			x = x*10 + int(c-'0')
		}
		for _, c := range pb[i] {
			y = y*10 + int(c-'0')
		}
		if x != y {
			return x < y
		}
	}
	return false
}
