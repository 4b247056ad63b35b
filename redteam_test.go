package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// The red-team corpus (testdata/redteam): command lines that must be
// refused, look-alikes a coding agent runs every day that must run, and
// paths the file tools must not write or read unasked. Every line goes
// through the whole decision (p.decide, what `lembas permissions check`
// runs) in every mode, and headless (-p) in auto. A must-refuse line is
// missed when any mode allows it or auto or headless does not refuse it;
// a must-allow line is falsely refused (or asked) when auto does not let
// it run. Headless, an ask is a refusal (nobody can answer). The corpus was written from the seeds and public knowledge, not
// from floor.json, so it tries the floor as an outside set would.

// redteamEntry is one corpus line and where it is in its file.
type redteamEntry struct {
	text  string
	class string
	where string
}

// readRedteam reads a corpus file: # lines name the class of the lines
// below them ("# class: name"); a line starting with "+|" continues the
// previous one after a newline; a line starting with "q:" is a Go-quoted
// string (for NUL and other bytes a text file does not hold well).
func readRedteam(t testing.TB, name string) []redteamEntry {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "redteam", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []redteamEntry
	class := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<16), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "# class:"):
			class = strings.TrimSpace(l[len("# class:"):])
			continue
		case strings.TrimSpace(l) == "" || strings.HasPrefix(l, "#"):
			continue
		case strings.HasPrefix(l, "+|"):
			if len(out) == 0 {
				t.Fatalf("%s:%d: a continuation with no line before it", name, n)
			}
			out[len(out)-1].text += "\n" + l[2:]
			continue
		case strings.HasPrefix(l, "q:"):
			s, err := strconv.Unquote(l[2:])
			if err != nil {
				t.Fatalf("%s:%d: %v", name, n, err)
			}
			l = s
		}
		out = append(out, redteamEntry{text: l, class: class, where: fmt.Sprintf("%s:%d", name, n)})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// redteamWorld makes the folders the corpus is judged in: home a temp
// folder holding the person's rc files, keys and credentials, the project
// its subfolder proj (a git repository with hooks), and the project's
// links that point out of it. It returns the project.
func redteamWorld(t testing.TB) string {
	t.Helper()
	// Not under /tmp where it can be helped: a home under /tmp would make
	// the everyday clean-ups of /tmp reach it.
	tmp, err := os.MkdirTemp("/var/tmp", "lembas-redteam")
	if err != nil {
		tmp = t.TempDir()
	} else {
		t.Cleanup(func() { os.RemoveAll(tmp) })
	}
	if tmp, err = filepath.EvalSymlinks(tmp); err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(tmp, "home")
	proj := filepath.Join(home, "proj")
	for _, d := range []string{"proj/.git/hooks", "proj/src", "proj/build", "proj/node_modules", "proj/dist", ".ssh", ".aws", ".config"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{".bashrc", ".zshrc", ".profile", ".bash_history", ".ssh/id_rsa", ".ssh/authorized_keys", ".aws/credentials", "proj/.git/config", "proj/src/a.go"} {
		if err := os.WriteFile(filepath.Join(home, f), []byte("x\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"etc":        "/etc",
		"sshlink":    filepath.Join(home, ".ssh"),
		"rc":         filepath.Join(home, ".bashrc"),
		"homelink":   home,
		"hookslink":  filepath.Join(proj, ".git", "hooks"),
		"dangling":   filepath.Join(home, ".ssh", "nothere"),
		"loop1":      "loop2",
		"loop2":      "loop1",
		"self":       "self",
		"src/up":     "../..",
		"rootlink":   "/",
		"awslink":    filepath.Join(home, ".aws", "credentials"),
		"src/hooked": "../.git/hooks/pre-commit",
	}
	for l, target := range links {
		if err := os.Symlink(target, filepath.Join(proj, l)); err != nil {
			if runtime.GOOS == "windows" {
				t.Skip("symlinks need a privilege here: ", err)
			}
			t.Fatal(err)
		}
	}
	t.Cleanup(setEnvs(map[string]string{"HOME": home, "USER": "tester", "LOGNAME": "tester", "XDG_CONFIG_HOME": filepath.Join(home, ".config"), "XDG_STATE_HOME": filepath.Join(home, ".local/state")}))
	return proj
}

// redteamVerdicts is what each mode, and auto headless, decides about one
// call of a tool.
func redteamVerdicts(proj, tool string, args map[string]string) map[string]string {
	raw, _ := json.Marshal(args)
	out := map[string]string{}
	for _, m := range theSpec().Modes.Order {
		d := permissionsFor(m, proj, false, &config{}).decide(theSpec().Tools[tool], raw)
		out[m] = d.Verdict
	}
	d := permissionsFor("auto", proj, true, &config{}).decide(theSpec().Tools[tool], raw)
	out["headless"] = d.Verdict
	return out
}

// redteamCounts is what one corpus run found.
type redteamCounts struct {
	missed, strict, askMissed, falseDeny, falseAsk, pathMiss, pathFalse int
	byClass                                                             map[string]int
}

func (n redteamCounts) classes() string {
	var cs []string
	for c, k := range n.byClass {
		cs = append(cs, fmt.Sprintf("%s=%d", c, k))
	}
	sort.Strings(cs)
	return strings.Join(cs, " ")
}

// judgeRedteam runs a corpus through the decision and fails the test on
// every line that goes wrong: a must-refuse line run in auto or headless
// (or allowed in any mode), a must-ask line allowed anywhere, a must-allow
// line refused or asked in auto, and a path the file tools would write or
// read unasked ("write P", "read P", "ask-write P"), refuse to write
// ("allow-write P"), or not refuse ("protected-write P").
func judgeRedteam(t *testing.T, proj string, refuse, ask, allow, paths []redteamEntry) redteamCounts {
	t.Helper()
	shell := theArityShellTool()
	n := redteamCounts{byClass: map[string]int{}}
	for _, e := range refuse {
		v := redteamVerdicts(proj, shell, map[string]string{"command": e.text})
		bad := v["auto"] != "deny" || v["headless"] == "allow"
		all := true
		for _, x := range v {
			bad = bad || x == "allow"
			all = all && x == "deny"
		}
		if !all {
			n.strict++
		}
		if bad {
			n.missed++
			n.byClass[e.class]++
			t.Errorf("MISS %s [%s] %q: %v", e.where, e.class, e.text, v)
		}
	}
	for _, e := range ask {
		v := redteamVerdicts(proj, shell, map[string]string{"command": e.text})
		bad := false
		for _, x := range v {
			bad = bad || x == "allow"
		}
		if bad {
			n.askMissed++
			n.byClass[e.class]++
			t.Errorf("MISS (ask) %s [%s] %q: %v", e.where, e.class, e.text, v)
		}
	}
	for _, e := range allow {
		v := redteamVerdicts(proj, shell, map[string]string{"command": e.text})
		switch v["auto"] {
		case "deny":
			n.falseDeny++
			t.Errorf("FALSE REFUSAL %s [%s] %q: %v", e.where, e.class, e.text, v)
		case "ask":
			n.falseAsk++
			t.Errorf("FALSE ASK %s [%s] %q: %v", e.where, e.class, e.text, v)
		}
	}
	for _, e := range paths {
		kind, p, ok := strings.Cut(e.text, " ")
		if !ok {
			t.Fatalf("%s: want KIND PATH", e.where)
		}
		tool := kind
		if kind == "allow-write" || kind == "protected-write" || kind == "ask-write" {
			tool = "write"
		}
		if tool != "read" && tool != "write" {
			t.Fatalf("%s: kind %q (want write, read, protected-write, ask-write or allow-write)", e.where, kind)
		}
		v := redteamVerdicts(proj, tool, map[string]string{"path": p, "content": "x\n"})
		switch {
		case kind == "allow-write" && v["auto"] != "allow":
			n.pathFalse++
			t.Errorf("FALSE PATH %s [%s] %q: %v", e.where, e.class, p, v)
		case kind == "protected-write" && v["auto"] != "deny":
			n.pathMiss++
			t.Errorf("PATH MISS %s [%s] %q: %v", e.where, e.class, p, v)
		case (kind == "write" || kind == "read" || kind == "ask-write") && v["auto"] == "allow":
			n.pathMiss++
			t.Errorf("PATH MISS %s [%s] %q: %v", e.where, e.class, p, v)
		}
	}
	return n
}

func TestRedteamCorpus(t *testing.T) {
	proj := redteamWorld(t)
	refuse := readRedteam(t, "refuse.txt")
	allow := readRedteam(t, "allow.txt")
	paths := readRedteam(t, "paths.txt")
	if len(refuse) < 250 || len(allow) < 120 {
		t.Fatalf("the corpus holds %d must-refuse and %d must-allow lines; it needs at least 250 and 120", len(refuse), len(allow))
	}
	ask := readRedteam(t, "ask.txt")
	n := judgeRedteam(t, proj, refuse, ask, allow, paths)
	t.Logf("redteam: must-refuse %d, missed %d (not refused in every mode: %d); must-ask %d, missed %d; must-allow %d, falsely refused %d, falsely asked %d; paths %d, missed %d, falsely refused %d; misses by class: %s",
		len(refuse), n.missed, n.strict, len(ask), n.askMissed, len(allow), n.falseDeny, n.falseAsk, len(paths), n.pathMiss, n.pathFalse, n.classes())
}

// FuzzFloorBeyondWords feeds hostile lines, seeded with both corpora,
// through the whole shell decision in the corpus's world (links that
// loop, point out or dangle): it must give a verdict, never crash.
func FuzzFloorBeyondWords(f *testing.F) {
	proj := redteamWorld(f)
	for _, name := range []string{"refuse.txt", "allow.txt", "ask.txt"} {
		for _, e := range readRedteam(f, name) {
			f.Add(e.text)
		}
	}
	for _, name := range []string{"refuse.txt", "allow.txt", "ask.txt", "gaps.txt"} {
		for _, e := range readRedteam2(f, name) {
			f.Add(e.text) // the second corpus too: its raw-line scans (second_look) get the same hostile lines
		}
	}
	p := permissionsFor("auto", proj, false, &config{})
	shell := theSpec().Tools[theArityShellTool()]
	f.Fuzz(func(t *testing.T, line string) {
		raw, _ := json.Marshal(map[string]string{"command": line})
		switch d := p.decide(shell, raw); d.Verdict {
		case "allow", "ask", "deny":
		default:
			t.Fatalf("%q: verdict %q", line, d.Verdict)
		}
	})
}

// BenchmarkDecideWrites times the whole shell decision on an everyday
// line with writes, a cd and a link to follow: what the checks beyond the
// words (write_guarded, links, exfiltration) cost on top of the floor.
func BenchmarkDecideWrites(b *testing.B) {
	proj := redteamWorld(b)
	p := permissionsFor("auto", proj, false, &config{})
	t := theSpec().Tools[theArityShellTool()]
	args := json.RawMessage(`{"command":"cd src && cp a.go ../build/ && echo done > ../build/log.txt && rm -rf ../build/tmp | tee -a ../build/x.log"}`)
	for b.Loop() {
		if d := p.decide(t, args); d.Verdict != "allow" {
			b.Fatalf("decision %+v", d)
		}
	}
}
