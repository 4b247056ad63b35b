package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The permission conformance runner: a whole decision on a real project in
// a temp folder. The case gives the mode, the config rules, files and
// symlinks to make (@outside, @home and @proj stand for the folders made
// for the case), always answers given before, and the call; the output is
// the verdict, the rule that decided, and the options a question offers.
func init() {
	conformanceRunners["permission"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Mode     string            `json:"mode"`
			Headless bool              `json:"headless"`
			Rules    permRules         `json:"rules"`
			Files    map[string]string `json:"files"`
			Symlinks map[string]string `json:"symlinks"`
			Answers  []struct {
				Call  permCall `json:"call"`
				Scope string   `json:"scope"`
			} `json:"answers"`
			NewSession bool     `json:"new_session"`
			Call       permCall `json:"call"`
			Scopes     bool     `json:"scopes"` // also what each always answer would allow, in words
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		tmp, err := os.MkdirTemp("", "lembas-perm")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		tmp, _ = filepath.EvalSymlinks(tmp)
		dirs := map[string]string{"@proj": filepath.Join(tmp, "proj"), "@outside": filepath.Join(tmp, "outside"), "@home": filepath.Join(tmp, "home")}
		place := func(s string) string {
			for k, v := range dirs {
				if s == k || strings.HasPrefix(s, k+"/") {
					return v + s[len(k):]
				}
			}
			return s
		}
		for _, d := range dirs {
			os.MkdirAll(d, 0o755)
		}
		restore := setEnvs(map[string]string{"HOME": dirs["@home"], "XDG_CONFIG_HOME": filepath.Join(dirs["@home"], ".config"), "XDG_STATE_HOME": filepath.Join(dirs["@home"], ".local/state")})
		defer restore()
		for name, content := range in.Files {
			f := name
			if !strings.HasPrefix(f, "@") {
				f = "@proj/" + f
			}
			f = place(f)
			os.MkdirAll(filepath.Dir(f), 0o755)
			if err := os.WriteFile(f, []byte(content), 0o644); err != nil {
				return nil, err
			}
		}
		for link, target := range in.Symlinks {
			l := filepath.Join(dirs["@proj"], link)
			os.MkdirAll(filepath.Dir(l), 0o755)
			if err := os.Symlink(place(target), l); err != nil {
				return nil, err
			}
		}
		mode, err := normMode(in.Mode)
		if err != nil {
			return nil, err
		}
		cfg := &config{Permissions: in.Rules}
		p := permissionsFor(mode, dirs["@proj"], in.Headless, cfg)
		for _, a := range in.Answers {
			t, args, err := a.Call.build(place)
			if err != nil {
				return nil, err
			}
			d := p.decide(t, args)
			if d.Verdict == "ask" && contains(p.request("", t, args, d).Options, a.Scope) {
				if err := p.remember(t, d, a.Scope); err != nil {
					return nil, err
				}
			}
		}
		if in.NewSession {
			p = permissionsFor(mode, dirs["@proj"], in.Headless, cfg)
		}
		t, args, err := in.Call.build(place)
		if err != nil {
			return nil, err
		}
		d := p.decide(t, args)
		out := map[string]any{"verdict": map[string]string{"allow": "allow", "ask": "ask", "deny": "refuse"}[d.Verdict], "rule": d.Rule}
		if d.Verdict == "ask" {
			req := p.request("", t, args, d)
			out["options"] = req.Options
			if in.Scopes && req.Scopes != nil {
				out["scopes"] = req.Scopes
			}
		}
		return out, nil
	}
}

// permCall is one call in a permission case: a tool of the spec (or a
// made-up one with its risk and confirm), and a command, a path or args.
type permCall struct {
	Tool    string          `json:"tool"`
	Risk    string          `json:"risk"`
	Confirm string          `json:"confirm"`
	Command string          `json:"command"`
	Path    *string         `json:"path"`
	Args    json.RawMessage `json:"args"`
}

func (c permCall) build(place func(string) string) (*toolSpec, json.RawMessage, error) {
	t := &toolSpec{Name: c.Tool, Risk: c.Risk, Parameters: json.RawMessage(`{}`)}
	if have, ok := theSpec().Tools[c.Tool]; ok {
		cp := *have
		t = &cp
	}
	if c.Tool == "" {
		t.Name = "bash"
		cp := *theSpec().Tools["bash"]
		t = &cp
	}
	if c.Risk != "" {
		t.Risk = c.Risk
	}
	if c.Confirm != "" {
		t.Confirm = c.Confirm
	}
	switch {
	case c.Args != nil:
		var m map[string]any
		if err := json.Unmarshal(c.Args, &m); err != nil {
			return nil, nil, err
		}
		if p, ok := m["path"].(string); ok {
			m["path"] = place(p)
		}
		b, err := json.Marshal(m)
		return t, b, err
	case c.Path != nil:
		b, err := json.Marshal(map[string]string{"path": place(*c.Path)})
		return t, b, err
	}
	b, err := json.Marshal(map[string]string{"command": c.Command})
	return t, b, err
}

// setEnvs sets environment variables and returns what puts them back.
func setEnvs(vars map[string]string) func() {
	old := map[string]*string{}
	for k, v := range vars {
		if o, ok := os.LookupEnv(k); ok {
			old[k] = &o
		} else {
			old[k] = nil
		}
		os.Setenv(k, v)
	}
	return func() {
		for k, o := range old {
			if o == nil {
				os.Unsetenv(k)
			} else {
				os.Setenv(k, *o)
			}
		}
	}
}

// TestPermDefaults: defaults.json loads strictly, its groups name real
// tools, and every text the code fills is there.
func TestPermDefaults(t *testing.T) {
	d, err := permDefaults()
	if err != nil {
		t.Fatal(err)
	}
	for key, tools := range d.Keys.Groups {
		for _, name := range tools {
			if theSpec().Tools[name] == nil {
				t.Errorf("keys.groups.%s names %q, which is no tool", key, name)
			}
		}
	}
	for _, k := range []string{"confirm", "corrected_refused", "floor", "headless_other", "outside", "protected_command", "protected_read", "protected_write", "rule_ask", "rule_deny", "rules_broken", "store_failed", "unparsed", "unparsed_headless"} {
		if d.Texts[k] == "" {
			t.Errorf("texts.%s is missing", k)
		}
	}
	for _, r := range d.allow {
		if r.Tool != "bash" || r.Pattern == "" {
			t.Errorf("default %q: want a bash command pattern", r.Text)
		}
	}
}
