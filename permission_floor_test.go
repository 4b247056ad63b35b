package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The floor conformance runner: each case is a class of spellings, every
// line of which goes through the whole decision (p.decide, as `lembas
// permissions check` runs it) in each mode the case expects a verdict for.
// Lines given as paths go through the read or write tool instead. The home
// folder is a temp folder and the project its subfolder proj, so that ..
// from the project reaches home as it often does.
func init() {
	conformanceRunners["floor"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Lines []string          `json:"lines"`
			Tool  string            `json:"tool"`
			Paths []string          `json:"paths"`
			Modes []string          `json:"modes"`
			Files map[string]string `json:"files"`
			Links map[string]string `json:"symlinks"`
			// Sandbox "off" judges as where no OS sandbox is in force; Allow
			// are config.yaml permissions.allow rules (floor_boundary).
			Sandbox string   `json:"sandbox"`
			Allow   []string `json:"allow"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		tmp, err := os.MkdirTemp("", "lembas-floor")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		tmp, _ = filepath.EvalSymlinks(tmp)
		home := filepath.Join(tmp, "home")
		proj := filepath.Join(home, "proj")
		if err := os.MkdirAll(proj, 0o755); err != nil {
			return nil, err
		}
		os.MkdirAll(filepath.Join(tmp, "outside"), 0o755)
		place := func(s string) string {
			for k, v := range map[string]string{"@proj": proj, "@home": home, "@outside": filepath.Join(tmp, "outside")} {
				if len(s) >= len(k) && s[:len(k)] == k {
					return v + s[len(k):]
				}
			}
			return s
		}
		for name, content := range in.Files {
			f := filepath.Join(proj, name)
			os.MkdirAll(filepath.Dir(f), 0o755)
			if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
				return nil, err
			}
		}
		names := make([]string, 0, len(in.Links))
		for l := range in.Links {
			names = append(names, l)
		}
		sort.Strings(names)
		for _, l := range names {
			f := filepath.Join(proj, l)
			os.MkdirAll(filepath.Dir(f), 0o755)
			if err := os.Symlink(place(in.Links[l]), f); err != nil {
				return nil, err
			}
		}
		restore := setEnvs(map[string]string{"HOME": home, "USER": "tester", "LOGNAME": "tester", "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_STATE_HOME": filepath.Join(home, ".local/state")})
		defer restore()
		modes := in.Modes
		if len(modes) == 0 {
			modes = []string{"auto", "manual"}
		}
		verdicts := map[string]string{"allow": "allow", "ask": "ask", "deny": "refuse"}
		out := map[string]any{}
		odd := map[string]string{}
		for _, m := range modes {
			mode := m
			if m == "headless" {
				mode = "auto" // auto in lembas -p, where nobody can answer
			}
			p := permissionsFor(mode, proj, m == "headless", &config{Permissions: permRules{Allow: in.Allow}})
			if in.Sandbox == "off" {
				p.setSandbox("no sandbox in this case")
			}
			var got []string
			var calls []string
			if in.Tool != "" {
				for _, pa := range in.Paths {
					t := theSpec().Tools[in.Tool]
					args, _ := json.Marshal(map[string]string{"path": pa, "content": "x\n"})
					d := p.decide(t, args)
					got = append(got, verdicts[d.Verdict]+" ("+d.Rule+")")
					calls = append(calls, pa)
				}
			} else {
				for _, l := range in.Lines {
					args, _ := json.Marshal(map[string]string{"command": l})
					d := p.decide(theSpec().Tools["bash"], args)
					got = append(got, verdicts[d.Verdict]+" ("+d.Rule+")")
					calls = append(calls, l)
				}
			}
			// The verdict of the class is what most of its lines get; every
			// line that differs is listed, so a failure names each spelling.
			count := map[string]int{}
			for _, g := range got {
				count[strings.Fields(g)[0]]++
			}
			most := ""
			for _, v := range []string{"refuse", "ask", "allow"} {
				if count[v] > count[most] {
					most = v
				}
			}
			for i, g := range got {
				if strings.Fields(g)[0] != most {
					odd[m+": "+calls[i]] = g
				}
			}
			out[m] = most
		}
		if len(odd) > 0 {
			out["differ"] = odd
		}
		return out, nil
	}
}

// TestFloorClassesThroughCLI runs a sample of every floor class (its first,
// middle and last spelling) through the real binary, `lembas permissions
// check --mode auto`, the way an outside set tries them, and wants the
// class's verdict for auto mode as the exit status.
func TestFloorClassesThroughCLI(t *testing.T) {
	data, err := fs.ReadFile(harnessFS, "harness/conformance/floor.json")
	if err != nil {
		t.Fatal(err)
	}
	var f conformanceFile
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(t.TempDir(), "home")
	proj := filepath.Join(home, "proj")
	os.MkdirAll(proj, 0o755)
	env := []string{"HOME=" + home, "USER=tester", "LOGNAME=tester", "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "XDG_STATE_HOME=" + filepath.Join(home, ".local/state")}
	codes := map[string]int{"allow": 0, "ask": 3, "refuse": 4}
	n := 0
	for _, c := range f.Cases {
		var in struct {
			Lines    []string          `json:"lines"`
			Tool     string            `json:"tool"`
			Paths    []string          `json:"paths"`
			Symlinks map[string]string `json:"symlinks"`
		}
		var want map[string]any
		json.Unmarshal(c.Input, &in)
		json.Unmarshal(c.Expect, &want)
		v, ok := want["auto"].(string)
		if !ok || len(in.Symlinks) > 0 {
			continue
		}
		items := in.Lines
		if in.Tool != "" {
			items = in.Paths
		}
		if len(items) == 0 {
			continue
		}
		for _, i := range []int{0, len(items) / 2, len(items) - 1} {
			args := []string{"permissions", "check", "--mode", "auto", "--sandbox", "on", "--", items[i]}
			if in.Tool != "" {
				args = []string{"permissions", "check", "--mode", "auto", "--sandbox", "on", "--tool", in.Tool, "--path", items[i]}
			}
			r := runLembas(t, env, proj, "", args...)
			n++
			if r.code != codes[v] {
				t.Errorf("%s: %q: exit %d (%s), want %s", c.Name, items[i], r.code, strings.TrimSpace(r.stdout+r.stderr), v)
			}
		}
	}
	if n < 50 {
		t.Fatalf("only %d spellings tried through the CLI", n)
	}
}

// BenchmarkFloorUnsure times the floor on a line that takes its slow
// path: unknown operands tried as each possible value, a cd to an unknown
// folder, xargs, and git's config read for programs.
func BenchmarkFloorUnsure(b *testing.B) {
	env := shellEnv{Home: "/home/u", User: "u", Cwd: "/home/u/proj"}
	line := `cd "$D" && printf '%s\n' "$X" | xargs rm -rf -- && git -c core.pager=less log > "$OUT"`
	hit, err := checkHardline(line, env)
	if err != nil || hit == nil || !hit.Unsure {
		b.Fatal(hit, err)
	}
	b.ReportAllocs()
	for b.Loop() {
		checkHardline(line, env)
	}
}
