package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// The floor_heredoc conformance area (here-documents, written scripts,
// PowerShell blocks) is run by the floor area's runner.
func init() {
	conformanceRunners["floor_heredoc"] = func(input json.RawMessage) (any, error) {
		return conformanceRunners["floor"](input)
	}
}

// TestWrittenScriptsBudget: a script the line writes is read in while the
// commands read in fit the line's own limit; one run so often that they
// would not stays unread, so runs-written-file is unsure for it rather
// than the floor reading hundreds of thousands of commands.
func TestWrittenScriptsBudget(t *testing.T) {
	h, err := loadHardline()
	if err != nil {
		t.Fatal(err)
	}
	env := shellEnv{Home: "/home/u", Cwd: "/home/u/p"}
	body := strings.Repeat("ls\n", 300)
	once := "cat > x.sh <<'EOF'\n" + body + "EOF\nbash x.sh"
	if hit, err := checkHardline(once, env); err != nil || hit != nil {
		t.Fatalf("run once: %v %+v, want it read and passed", err, hit)
	}
	many := "cat > x.sh <<'EOF'\n" + body + "EOF\n" + strings.Repeat("bash x.sh; ", h.Plain.Limits.Commands/300+2)
	hit, err := checkHardline(many, env)
	if err != nil || hit == nil || hit.Rule != "runs-written-file" || !hit.Unsure {
		t.Fatalf("run many times: %v %+v, want runs-written-file unsure", err, hit)
	}
}

// printfText spells what printf writes, or says it cannot.
func TestPrintfText(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
		ok   bool
	}{
		{[]string{`rm -rf ~\n`}, "rm -rf ~\n", true},
		{[]string{`%s\n`, "a", "b"}, "a\nb\n", true},
		{[]string{`%s=%s;`, "a", "1", "b"}, "a=1;b=;", true},
		{[]string{`%b`, `x\ty`}, "x\ty", true},
		{[]string{`100%%\n`, "extra"}, "100%\n", true},
		{[]string{"--", `it\'s`}, "it's", true},
		{[]string{`%d\n`, "3"}, "", false},
		{[]string{`%5s`, "x"}, "", false},
		{[]string{`\x72m`}, "", false},
		{[]string{"-v", "x", "y"}, "", false},
		{[]string{"$X"}, "", false},
		{nil, "", false},
	} {
		got, ok := printfText(c.args)
		if got != c.want || ok != c.ok {
			t.Errorf("printfText(%q) = %q, %v; want %q, %v", c.args, got, ok, c.want, c.ok)
		}
	}
}
