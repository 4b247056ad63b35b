package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// The arity conformance runner: a line gives its arity prefix and the
// pattern "always" stores; always+line, rules+line and rules+path give
// coverage; rule gives the parsed rule.
func init() {
	conformanceRunners["arity"] = func(input json.RawMessage) (any, error) {
		var in struct {
			Line   *string  `json:"line"`
			Always *string  `json:"always"`
			Rules  []string `json:"rules"`
			Rule   *string  `json:"rule"`
			Path   *string  `json:"path"`
		}
		if err := json.Unmarshal(input, &in); err != nil {
			return nil, err
		}
		env := shellEnv{Home: "/home/user"}
		switch {
		case in.Rule != nil:
			r, err := parseRule(*in.Rule)
			if err != nil {
				return map[string]bool{"error": true}, nil
			}
			return map[string]string{"tool": r.Tool, "pattern": r.Pattern}, nil
		case in.Path != nil:
			for _, s := range in.Rules {
				r, err := parseRule(s)
				if err != nil {
					return nil, err
				}
				if r.Tool != "bash" && matchPathRule(r, *in.Path) {
					return map[string]bool{"covered": true}, nil
				}
			}
			return map[string]bool{"covered": false}, nil
		case in.Always != nil || in.Rules != nil:
			var rules []permRule
			source := "config"
			if in.Always != nil {
				source = "session" // an always answer, judged as the session judges one
				cmds, err := parseShell(*in.Always, env)
				if err != nil {
					return nil, err
				}
				for _, c := range cmds {
					r, err := parseRule("bash: " + alwaysPattern(c))
					if err != nil {
						return nil, err
					}
					rules = append(rules, r)
				}
			}
			for _, s := range in.Rules {
				r, err := parseRule(s)
				if err != nil {
					return nil, err
				}
				rules = append(rules, r)
			}
			ok, err := allowedByRules(rules, source, *in.Line, env)
			if err != nil {
				return map[string]string{"verdict": "unparsed"}, nil
			}
			return map[string]bool{"covered": ok}, nil
		}
		cmds, err := parseShell(*in.Line, env)
		if err != nil || len(cmds) == 0 {
			return map[string]string{"verdict": "unparsed"}, nil
		}
		c := cmds[len(cmds)-1]
		return map[string]string{"prefix": strings.Join(arityPrefix(c.Words), " "), "pattern": alwaysPattern(c)}, nil
	}
}

func TestArityTableLoads(t *testing.T) {
	a, err := loadArity()
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Arity) < 80 {
		t.Errorf("arity table has %d entries, want at least 80", len(a.Arity))
	}
	for k, v := range a.Arity {
		if v < 1 || v < len(strings.Fields(k)) {
			t.Errorf("arity %q = %d: must cover at least its own words", k, v)
		}
	}
}

func TestParseRuleError(t *testing.T) {
	_, err := parseRule("Bad Tool: x")
	if err == nil || !strings.Contains(err.Error(), `"tool: pattern"`) {
		t.Errorf("got %v, want an error naming the accepted form", err)
	}
}

func TestWildMatch(t *testing.T) {
	for _, tc := range []struct {
		p, s string
		want bool
	}{
		{"*", "", true},
		{"a*b", "ab", true},
		{"a*b", "axxb", true},
		{"a*b", "axxbc", false},
		{"git status *", "git status -s", true},
		{"*x*y*", "0x1y2", true},
		{"abc", "abd", false},
	} {
		if got := wildMatch(tc.p, tc.s); got != tc.want {
			t.Errorf("wildMatch(%q, %q) = %v, want %v", tc.p, tc.s, got, tc.want)
		}
	}
}

func TestMatchCommandRuleAssigns(t *testing.T) {
	r, _ := parseRule("bash: make *")
	if matchCommandRule(r, shellCmd{Words: []string{"make"}, Assigns: []string{"CC=evil"}}) {
		t.Error("a rule without the variable covered a command that sets one")
	}
	if !matchCommandRule(r, shellCmd{Words: []string{"make", "test"}}) {
		t.Error("make * did not cover make test")
	}
}

func TestCommandAllowedByEmpty(t *testing.T) {
	ok, err := allowedByRules([]permRule{{Tool: "bash"}}, "config", "   # nothing", shellEnv{})
	if ok || err != nil {
		t.Errorf("got %v, %v; an empty line is not allowed by rules", ok, err)
	}
}

// allowedByRules asks the session's own matcher (permissions.allowedBy,
// as decideCommand uses it for the person's rules) whether every simple
// command of a line is covered; a line with no command is not allowed.
func allowedByRules(rules []permRule, source, line string, env shellEnv) (bool, error) {
	cmds, err := parseShell(line, env)
	if err != nil {
		return false, err
	}
	p := &permissions{home: env.Home}
	var sr []sourcedRule
	for _, r := range rules {
		sr = append(sr, sourcedRule{r, source})
	}
	n := 0
	for _, c := range cmds {
		if len(c.Words) == 0 {
			continue // an assignment or a comment runs nothing
		}
		n++
		if _, ok := p.allowedBy(sr, "bash", c); !ok {
			return false, nil
		}
	}
	return n > 0, nil
}
