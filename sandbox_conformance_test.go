package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The sandbox area: what a command's policy holds for a mode, a config and
// an environment (laid out, not probed, so it does not depend on the
// machine); how the permission check treats a request to run unsandboxed
// (through the session's real rules); which output reads as a denial; and
// how config.yaml's sandbox: section is read.
func init() {
	conformanceRunners["sandbox"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Kind   string          `json:"kind"`
			Mode   string          `json:"mode"`
			Config string          `json:"config"`
			Env    json.RawMessage `json:"env"` // policy: a map; env: a list
			Host   string          `json:"host"`
			Home   string          `json:"home"`
			Git    bool            `json:"git"`
			Root   string          `json:"root"` // policy: the project's folder (default /p)
			// GitConfig (policy, git): the repository's .git/config; Files:
			// empty files made in the project first.
			GitConfig string    `json:"git_config"`
			Files     []string  `json:"files"`
			Command   string    `json:"command"`
			Reason    string    `json:"reason"`
			Output    string    `json:"output"`
			Rules     permRules `json:"rules"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		var envMap map[string]string
		var envList []string
		if in.Kind == "env" {
			json.Unmarshal(in.Env, &envList)
		} else if len(in.Env) > 0 {
			json.Unmarshal(in.Env, &envMap)
		}
		switch in.Kind {
		case "git_gone":
			return gitGoneCase(input)
		case "env", "host":
			c, err := parseConfig([]byte(in.Config), "config.yaml")
			if err != nil {
				return nil, err
			}
			sb := newSandbox(c.Sandbox, "/p")
			if in.Kind == "host" {
				return sb.allowedHost(in.Host), nil
			}
			kept, dropped := sb.scrubEnv(envList)
			return map[string]any{"kept": kept, "dropped": dropped}, nil
		case "config":
			c, err := parseConfig([]byte(in.Config), "config.yaml")
			if err != nil {
				return map[string]any{"error": err.Error()}, nil
			}
			return c.Sandbox, nil
		case "policy":
			c, err := parseConfig([]byte(in.Config), "config.yaml")
			if err != nil {
				return nil, err
			}
			root := "/p"
			if in.Root != "" {
				root = in.Root
			}
			if in.Git {
				dir, err := os.MkdirTemp("", "lembas-conf-")
				if err != nil {
					return nil, err
				}
				defer os.RemoveAll(dir)
				root = evalExisting(dir)
				os.MkdirAll(filepath.Join(root, ".git", "hooks"), 0o755)
				if in.GitConfig != "" {
					os.WriteFile(filepath.Join(root, ".git", "config"), []byte(in.GitConfig), 0o644)
				}
				for _, f := range in.Files {
					os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o755)
					os.WriteFile(filepath.Join(root, f), nil, 0o644)
				}
			}
			p := newSandbox(c.Sandbox, root).policyFor(in.Mode, func(k string) string { return envMap[k] }, in.Home)
			p.Keep = markHomeKeep(p.Keep, in.Home)
			for _, l := range []*[]string{&p.Write, &p.Protect, &p.Pin, &p.Later} {
				for i, s := range *l {
					if in.Git && strings.HasPrefix(s, root) {
						(*l)[i] = "<project>" + s[len(root):]
					}
				}
			}
			return p, nil
		case "ask":
			dir, err := os.MkdirTemp("", "lembas-conf-")
			if err != nil {
				return nil, err
			}
			defer os.RemoveAll(dir)
			root := evalExisting(dir)
			perm, err := newPermissionsFrom(in.Mode, root, false, &config{Permissions: in.Rules})
			if err != nil {
				return nil, err
			}
			t := theSpec().Tools["bash"]
			args, _ := json.Marshal(map[string]string{"command": in.Command, "unsandboxed": in.Reason})
			d := perm.decide(t, args)
			out := map[string]any{"verdict": d.Verdict}
			if d.Verdict == "ask" {
				req := perm.request("c1", t, args, d)
				out["options"] = req.Options
				out["rule"] = d.Rule
			}
			return out, nil
		case "denial":
			return denialLine(in.Output), nil
		}
		return nil, fmt.Errorf("unknown kind %q", in.Kind)
	}
}

// FuzzSandboxConfig: any config.yaml gives a config or an error, never a
// crash, every allowed host is ASCII (an international one in punycode),
// and every root a policy lays out from it is absolute.
func FuzzSandboxConfig(f *testing.F) {
	for _, s := range []string{"sandbox: off\n", "sandbox: on\n", "sandbox:\n  network: false\n", "sandbox:\n  writable: [~/.npm, $GOCACHE/x, rel]\n", "sandbox: 3\n", "sandbox:\n  required: yes\n", "sandbox:\n  writable:\n    - ~\n    - $\n",
		"sandbox:\n  network:\n    allow: [bücher.example, '*.Bücher.example', ü..x, aאb.example]\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		c, err := parseConfig([]byte(data), "config.yaml")
		if err != nil {
			return
		}
		for _, a := range c.Sandbox.Allow { // the gate judges ASCII names only: an entry it could never match is refused at load
			for i := 0; i < len(a); i++ {
				if a[i] >= 0x80 {
					t.Fatalf("allow entry %q is not ASCII (from %q)", a, data)
				}
			}
		}
		p := newSandbox(c.Sandbox, "/p").policyFor("auto", func(k string) string { return "/env/" + k }, "/h")
		for _, w := range p.Write {
			if !filepath.IsAbs(w) {
				t.Fatalf("root %q is not absolute (from %q)", w, data)
			}
		}
	})
}

// FuzzDenialLine: any output gives one line of it (or nothing), never longer
// than the cap.
func FuzzDenialLine(f *testing.F) {
	f.Add("a\nb: Permission denied\n")
	f.Add("\xff\xfeOperation not permitted" + strings.Repeat("x", 400))
	f.Fuzz(func(t *testing.T, out string) {
		l := denialLine(out)
		if strings.Contains(l, "\n") || len([]rune(l)) > 201 {
			t.Fatalf("line %q", l)
		}
	})
}

// FuzzProxyHost: whatever host a command names to the proxy, only a listed
// name or a name under a "*." entry is allowed — never an address, never
// the bare name of a wildcard.
func FuzzProxyHost(f *testing.F) {
	for _, s := range []string{"proxy.golang.org", "127.0.0.1", "x.corp.example", "corp.example", "evilcorp.example", "[::1]", "a..corp.example", ""} {
		f.Add(s)
	}
	sb := newSandbox(sandboxConfig{Allow: []string{"*.corp.example"}}, "/p")
	f.Fuzz(func(t *testing.T, host string) {
		if !sb.allowedHost(host) {
			return
		}
		h := strings.ToLower(strings.TrimSuffix(host, "."))
		listed := false
		for _, a := range theSandboxSpec().Proxy.Allow {
			listed = listed || a == h
		}
		if !listed && !strings.HasSuffix(h, ".corp.example") {
			t.Fatalf("%q allowed", host)
		}
		if h == "corp.example" {
			t.Fatalf("the bare name of a wildcard was allowed")
		}
	})
}

// markHomeKeep puts "<home.keep>" in place of sandbox.json's home.keep as
// policyFor expands it for home, so a case names only what is kept
// besides (config's readable, the project).
func markHomeKeep(keep []string, home string) []string {
	var std []string
	for _, e := range theSandboxSpec().Home.Keep {
		if r, ok := expandRoot(e, func(string) string { return "" }, home); ok {
			std = append(std, r)
		}
	}
	return markRun(keep, std, "<home.keep>")
}

// markRun puts marker in place of the run std in list, where it is.
func markRun(list, std []string, marker string) []string {
	for i := 0; i+len(std) <= len(list) && len(std) > 0; i++ {
		if strings.Join(list[i:i+len(std)], "\x00") == strings.Join(std, "\x00") {
			return append(append(append([]string{}, list[:i]...), marker), list[i+len(std):]...)
		}
	}
	return list
}
