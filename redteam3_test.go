package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The third red-team corpus (testdata/redteam3), written for issue 20 ("a
// boundary that holds") by class: git history destroyed, the repository's
// store removed, deletes and writes outside the writable roots, disk fills,
// fork-bomb variants, cmd.exe and PowerShell spellings, and everyday work
// that must still run (a temp folder by variable, local keys). It is judged
// as the first two are (judgeRedteam, in redteamWorld). The nosandbox_
// files are judged with no OS sandbox in force: their ask lines must not
// run unasked in auto and are refused headless; their allow lines run.

// readRedteam3 reads a file of testdata/redteam3 as the second corpus's
// files are read (readRedteamIn).
func readRedteam3(t testing.TB, name string) []redteamEntry {
	return readRedteamIn(t, "redteam3", name, "redteam3/")
}

func TestRedteam3Corpus(t *testing.T) {
	refuse, ask, allow := readRedteam3(t, "refuse.txt"), readRedteam3(t, "ask.txt"), readRedteam3(t, "allow.txt")
	if len(refuse) < 100 || len(ask) < 120 || len(allow) < 60 {
		t.Fatalf("the corpus holds %d must-refuse, %d must-ask and %d must-allow lines; it needs at least 100, 120 and 60", len(refuse), len(ask), len(allow))
	}
	judgeCorpus(t, "redteam3", redteamWorld(t), refuse, ask, allow)
}

// judgeCorpus judges a corpus's three files in proj and logs what it found.
func judgeCorpus(t *testing.T, name, proj string, refuse, ask, allow []redteamEntry) {
	t.Helper()
	n := judgeRedteam(t, proj, refuse, ask, allow, nil)
	t.Logf("%s: must-refuse %d, missed %d (not refused in every mode: %d); must-ask %d, missed %d; must-allow %d, falsely refused %d, falsely asked %d; misses by class: %s",
		name, len(refuse), n.missed, n.strict, len(ask), n.askMissed, len(allow), n.falseDeny, n.falseAsk, n.classes())
}

// noSandboxJudge is the bash decision in auto in proj with no OS sandbox
// in force, at a terminal or headless.
func noSandboxJudge(proj string) func(line string, headless bool) decision {
	shell := theSpec().Tools[theArityShellTool()]
	return func(line string, headless bool) decision {
		p := permissionsFor("auto", proj, headless, &config{})
		p.setSandbox("no sandbox in this test")
		raw, _ := json.Marshal(map[string]string{"command": line})
		return p.decide(shell, raw)
	}
}

// TestRedteam3NoSandbox judges the nosandbox_ files with no OS sandbox in
// force, and the must-allow lines of every corpus too: where nothing
// bounds a command, what the floor cannot show stays inside the project
// is asked, and a line allowed with a sandbox is at most asked without.
func TestRedteam3NoSandbox(t *testing.T) {
	askLines := readRedteam3(t, "nosandbox_ask.txt")
	allowLines := readRedteam3(t, "nosandbox_allow.txt")
	proj := redteamWorld(t)
	shell := theSpec().Tools[theArityShellTool()]
	judge := noSandboxJudge(proj)
	for _, e := range askLines {
		if d := judge(e.text, false); d.Verdict == "allow" {
			t.Errorf("MISS %s [%s] %q: allowed with no sandbox", e.where, e.class, e.text)
		}
		d := judge(e.text, true)
		if d.Verdict != "deny" {
			t.Errorf("MISS headless %s %q: %s", e.where, e.text, d.Verdict)
		} else if d.Rule == "boundary.json no_sandbox" && (!strings.Contains(d.Reason, "no OS sandbox") || !strings.Contains(d.Reason, "permissions.allow")) {
			t.Errorf("%s: the refusal does not say why and what to set: %s", e.where, d.Reason)
		}
	}
	for _, e := range allowLines {
		if d := judge(e.text, false); d.Verdict != "allow" {
			t.Errorf("FALSE %s [%s] %q: %s (%s) with no sandbox", e.where, e.class, e.text, d.Verdict, d.Rule)
		}
	}
	// The person's own rule still allows: the no-sandbox ask is the mode's.
	p := permissionsFor("auto", proj, true, &config{Permissions: permRules{Allow: []string{"bash: go test *"}}})
	p.setSandbox("no sandbox in this test")
	raw, _ := json.Marshal(map[string]string{"command": "go test ./..."})
	if d := p.decide(shell, raw); d.Verdict != "allow" {
		t.Errorf("a config allow rule for go test: %s (%s)", d.Verdict, d.Reason)
	}
	// With a sandbox in force the same lines run (the sandbox bounds them).
	for _, l := range []string{"go test ./...", "npm ci", "make"} {
		raw, _ := json.Marshal(map[string]string{"command": l})
		if d := permissionsFor("auto", proj, true, &config{}).decide(shell, raw); d.Verdict != "allow" {
			t.Errorf("%q with a sandbox: %s (%s)", l, d.Verdict, d.Reason)
		}
	}
}

// TestRedteam3Scripts: a script written into the project and then run by
// name is read before it runs; what the floor refuses or asks in it is
// the line's verdict, and a script that cannot be read is asked.
func TestRedteam3Scripts(t *testing.T) {
	proj := redteamWorld(t)
	shell := theSpec().Tools[theArityShellTool()]
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(proj, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write("clean.sh", "#!/bin/sh\nset -e\nrm -rf build\necho cleaned\n")
	write("wipe.sh", "#!/bin/bash\nrm -rf ~/\n")
	write("history.sh", "git reset --hard HEAD~1\ngit reflog expire --expire=now --all\ngit gc --prune=now\n")
	write("gitstore.sh", "#!/usr/bin/env bash\nrm -rf .git/objects .git/refs\n")
	write("outer.sh", "echo start\nbash ./wipe.sh\n")
	write("home.sh", "rm -rf ~/Documents\n")
	write("bomb.sh", "f(){ f & f; }; f\n")
	write("binary.sh", "\x00\x01\x02ELF")
	write("tool.py", "#!/usr/bin/env python3\nimport shutil\n")
	cases := []struct{ line, auto string }{
		{"bash clean.sh", "allow"},
		{"./clean.sh", "allow"},
		{"sh -e clean.sh", "allow"},
		{"bash wipe.sh", "deny"},
		{"./wipe.sh", "deny"},
		{"sh wipe.sh", "deny"},
		{"source wipe.sh", "deny"},
		{". ./wipe.sh", "deny"},
		{"cd . && bash ./wipe.sh", "deny"},
		{"bash outer.sh", "deny"},
		{"bash history.sh", "ask"},
		{"bash gitstore.sh", "ask"},
		{"./gitstore.sh", "ask"},
		{"bash home.sh", "ask"},
		{"bash bomb.sh", "deny"},
		{"bash binary.sh", "ask"},
		{"./tool.py", "allow"},
	}
	for _, c := range cases {
		raw, _ := json.Marshal(map[string]string{"command": c.line})
		d := permissionsFor("auto", proj, false, &config{}).decide(shell, raw)
		if d.Verdict != c.auto {
			t.Errorf("%q: %s (%s: %s), want %s", c.line, d.Verdict, d.Rule, d.Reason, c.auto)
		}
	}
}

// The floor_boundary conformance area is run by the floor area's runner.
func init() {
	conformanceRunners["floor_boundary"] = func(input json.RawMessage) (any, error) {
		return conformanceRunners["floor"](input)
	}
}

// FuzzBoundary feeds hostile lines, seeded with the third corpus, through
// the boundary's own readers (the cmd.exe and PowerShell reading, sizes,
// mktemp values) and the whole decision with and without a sandbox: each
// must give an answer, never crash.
func FuzzBoundary(f *testing.F) {
	proj := redteamWorld(f)
	for _, name := range []string{"refuse.txt", "ask.txt", "allow.txt", "nosandbox_ask.txt", "nosandbox_allow.txt"} {
		for _, e := range readRedteam3(f, name) {
			f.Add(e.text)
		}
	}
	f.Add("${env:")
	f.Add("$(mktemp")
	f.Add("dd count=9999999999999999999999 bs=1E of=x if=/dev/zero")
	b := theBoundary()
	p := permissionsFor("auto", proj, false, &config{})
	bare := permissionsFor("auto", proj, true, &config{})
	bare.setSandbox("fuzz")
	shell := theSpec().Tools[theArityShellTool()]
	f.Fuzz(func(t *testing.T, line string) {
		b.windowsLine(line, proj, 0)
		sizeValue(line, 512)
		mktempValue(line)
		decodePSCommand(line)
		raw, _ := json.Marshal(map[string]string{"command": line})
		for _, q := range []*permissions{p, bare} {
			switch d := q.decide(shell, raw); d.Verdict {
			case "allow", "ask", "deny":
			default:
				t.Fatalf("%q: verdict %q", line, d.Verdict)
			}
		}
	})
}
