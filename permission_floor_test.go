package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
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
			p := permissionsFor(m, proj, false, &config{})
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
