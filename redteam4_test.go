package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The fourth red-team corpus (testdata/redteam4), written for issue 20 by
// a team apart from the first three's, from the classes, the
// seeds and how people and models write commands, with five other ways to
// write each line (wrappers, quoting, variables, here-strings,
// interpreters, cmd.exe and PowerShell). It is judged as the third is
// (judgeRedteam in redteamWorld; the nosandbox_ files with no OS sandbox).

func readRedteam4(t testing.TB, name string) []redteamEntry {
	return readRedteamIn(t, "redteam4", name, "redteam4/")
}

func TestRedteam4Corpus(t *testing.T) {
	refuse, ask, allow := readRedteam4(t, "refuse.txt"), readRedteam4(t, "ask.txt"), readRedteam4(t, "allow.txt")
	proj := redteamWorld(t)
	// The project's own secrets file, so that a pattern (.env*) is read
	// from the disk as the shell would expand it.
	if err := os.WriteFile(filepath.Join(proj, ".env"), []byte("API_KEY=x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if len(refuse)+len(ask) < 200 || len(allow) < 100 {
		t.Fatalf("the corpus holds %d must-refuse, %d must-ask and %d must-allow lines; it needs at least 200 refuse or ask and 100 allow", len(refuse), len(ask), len(allow))
	}
	judgeCorpus(t, "redteam4", proj, refuse, ask, allow)
}

// TestRedteam4NoSandbox: with no OS sandbox in force, the ask lines do not
// run unasked in auto nor headless; the allow lines run.
func TestRedteam4NoSandbox(t *testing.T) {
	askLines := readRedteam4(t, "nosandbox_ask.txt")
	allowLines := readRedteam4(t, "nosandbox_allow.txt")
	judge := noSandboxJudge(redteamWorld(t))
	missed, falsed := 0, 0
	for _, e := range askLines {
		a, h := judge(e.text, false), judge(e.text, true)
		// Headless an ask is a refusal (nobody can answer): what no rule
		// but the missing sandbox asks is refused by the decision itself.
		if a.Verdict == "allow" || h.Verdict == "allow" || (h.Verdict == "ask" && h.Rule == "boundary.json no_sandbox") {
			missed++
			t.Errorf("MISS %s [%s] %q: auto %s, headless %s", e.where, e.class, e.text, a.Verdict, h.Verdict)
		}
	}
	for _, e := range allowLines {
		if d := judge(e.text, false); d.Verdict != "allow" {
			falsed++
			t.Errorf("FALSE %s [%s] %q: %s (%s) with no sandbox", e.where, e.class, e.text, d.Verdict, d.Rule)
		}
	}
	t.Logf("redteam4 no sandbox: must-ask %d, missed %d; must-allow %d, falsely asked or refused %d", len(askLines), missed, len(allowLines), falsed)
}

// The floor_fourth conformance area is run by the floor area's runner.
func init() {
	conformanceRunners["floor_fourth"] = func(input json.RawMessage) (any, error) {
		return conformanceRunners["floor"](input)
	}
}

// FuzzRedteam4 feeds hostile lines, seeded with the fourth corpus, through
// the whole decision with and without a sandbox, and the Windows reading
// with its pipes: each must give an answer, never crash.
func FuzzRedteam4(f *testing.F) {
	proj := redteamWorld(f)
	for _, name := range []string{"refuse.txt", "ask.txt", "allow.txt", "nosandbox_ask.txt", "nosandbox_allow.txt"} {
		for _, e := range readRedteam4(f, name) {
			f.Add(e.text)
		}
	}
	f.Add("t=$(mktemp -d); t=$(mktemp -p \"$t\"); \"$t\"")
	f.Add("| | Remove-Item")
	f.Add("gci ~ | ? { $_ } | % { ri $_.FullName -r }; foreach ($f in (gci $HOME)) { ri $f }")
	f.Add("Set-Content x.ps1 'ri -r ~'; pwsh -File x.ps1; & .\\x.ps1")
	p := permissionsFor("auto", proj, false, &config{})
	bare := permissionsFor("auto", proj, true, &config{})
	bare.setSandbox("fuzz")
	shell := theSpec().Tools[theArityShellTool()]
	b := theBoundary()
	f.Fuzz(func(t *testing.T, line string) {
		winPipeline(line)
		b.windowsLine(line, proj, 0)
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
