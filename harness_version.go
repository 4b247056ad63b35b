package main

// harness_version.go: the spec version lembas announces (--version,
// _lembas/hello, initialize's harness_spec) is computed, not written: the
// highest version in harness/versions.json whose every CLI part, and every
// earlier version's, has its evidence in the embedded harness — the
// conformance areas it names (go test runs each; areas.txt lists them, as
// the cases are not embedded), the tools and the files.
// So the number cannot run ahead of what is built, and it rises by itself
// when the next version's evidence lands. Reading the table costs a small
// decode and a few lookups in the embedded files, once.

import (
	"encoding/json"
	"io/fs"
	"strings"
	"sync"
)

// versionsSpec is harness/versions.json.
type versionsSpec struct {
	About    string `json:"about"`
	Versions []struct {
		Version string        `json:"version"`
		Parts   []versionPart `json:"parts"`
	} `json:"versions"`
}

// versionPart is one thing a version asks of the CLI, with its evidence.
type versionPart struct {
	Part  string   `json:"part"`
	Areas []string `json:"areas,omitempty"`
	Tools []string `json:"tools,omitempty"`
	Files []string `json:"files,omitempty"`
	// Aliases: a tool of Tools that others were folded into, and their
	// names, which its file must keep as aliases that still run.
	Aliases map[string][]string `json:"aliases,omitempty"`
}

// conformanceAreas is the set harness/conformance/areas.txt names: the
// areas with cases, one a line (the cases themselves are not embedded).
func conformanceAreas(fsys fs.FS) map[string]bool {
	data, _ := fs.ReadFile(fsys, "harness/conformance/areas.txt")
	set := map[string]bool{}
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			set[l] = true
		}
	}
	return set
}

// missing lists the part's evidence that fsys lacks, as harness paths;
// areas is conformanceAreas(fsys).
func (p versionPart) missing(fsys fs.FS, areas map[string]bool) []string {
	var out []string
	check := func(name string) {
		if _, err := fs.Stat(fsys, name); err != nil {
			out = append(out, name)
		}
	}
	for _, a := range p.Areas {
		if !areas[a] {
			out = append(out, "harness/conformance/"+a+".json")
		}
	}
	for _, t := range p.Tools {
		check("harness/tools/" + t + ".json")
	}
	for t, names := range p.Aliases {
		path := "harness/tools/" + t + ".json"
		var ts struct {
			Aliases map[string][]string `json:"aliases"`
		}
		b, err := fs.ReadFile(fsys, path)
		if err == nil {
			json.Unmarshal(b, &ts)
		}
		for _, n := range names {
			if !contains(ts.Aliases["cli"], n) {
				out = append(out, path+" (alias "+n+")")
			}
		}
	}
	for _, f := range p.Files {
		check("harness/" + f)
	}
	return out
}

// builtVersion is the highest version of the table whose parts, and all
// earlier versions' parts, have their evidence in fsys; "0.0.0" when not
// even the first has.
func builtVersion(sp *versionsSpec, fsys fs.FS) string {
	v := "0.0.0"
	areas := conformanceAreas(fsys)
	for _, ver := range sp.Versions {
		for _, p := range ver.Parts {
			if len(p.missing(fsys, areas)) > 0 {
				return v
			}
		}
		v = ver.Version
	}
	return v
}

var harnessVersionOnce = sync.OnceValue(func() string {
	data, err := harnessFS.ReadFile("harness/versions.json")
	if err != nil {
		return "unknown"
	}
	var sp versionsSpec
	if json.Unmarshal(data, &sp) != nil {
		return "unknown"
	}
	return builtVersion(&sp, harnessFS.FS)
})

// harnessVersion is the harness spec version lembas announces.
func harnessVersion() string { return harnessVersionOnce() }
