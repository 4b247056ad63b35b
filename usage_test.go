package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"testing"
)

// runnerTB lets a conformance runner (which has no *testing.T) use the
// fake model: the few methods it calls, kept here.
type runnerTB struct {
	testing.TB
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

func (r *runnerTB) Errorf(format string, a ...any) {
	r.mu.Lock()
	r.errs = append(r.errs, fmt.Sprintf(format, a...))
	r.mu.Unlock()
}
func (r *runnerTB) Cleanup(f func()) { r.cleanups = append(r.cleanups, f) }
func (r *runnerTB) Helper()          {}

// withEnv sets environment variables for the span of one case.
func withEnv(kv map[string]string) func() {
	old := map[string]*string{}
	for k, v := range kv {
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

type cliCaseReply struct {
	Text string          `json:"text,omitempty"`
	Call string          `json:"call,omitempty"`
	Args json.RawMessage `json:"args,omitempty"`
}

// runCLICase runs one `cli` conformance case in process, as `lembas ARGS`,
// against a loopback fake model and a config folder, state folder and
// project of its own.
func runCLICase(input json.RawMessage) (any, error) {
	var in struct {
		Op       string            `json:"op"`
		Args     []string          `json:"args"`
		Config   *string           `json:"config"`
		Files    map[string]string `json:"files"`
		Replies  []cliCaseReply    `json:"replies"`
		SentHas  string            `json:"sent_has"`
		Settings map[string]string `json:"settings"`
		Version  string            `json:"version"`
		Key      string            `json:"key"`
		Value    string            `json:"value"`
		Word     string            `json:"word"`
		Known    []string          `json:"known"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return nil, err
	}
	switch in.Op {
	case "stamp":
		bi := &debug.BuildInfo{}
		bi.Main.Version = in.Version
		var keys []string
		for k := range in.Settings {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			bi.Settings = append(bi.Settings, debug.BuildSetting{Key: k, Value: in.Settings[k]})
		}
		return map[string]string{"stamp": buildStamp(bi)}, nil
	case "on_off":
		v, err := parseOnOff(in.Key, in.Value)
		out := map[string]any{"on": v}
		if err != nil {
			out["error"] = err.Error()
		}
		return out, nil
	case "nearest":
		return map[string]any{"near": nearestWords(in.Word, in.Known)}, nil
	case "run":
	default:
		return nil, fmt.Errorf("unknown op %q", in.Op)
	}
	tb := &runnerTB{}
	defer func() {
		for _, f := range tb.cleanups {
			f()
		}
	}()
	f := newFakeModel(tb)
	for _, r := range in.Replies {
		if r.Call != "" {
			var args any
			json.Unmarshal(r.Args, &args)
			f.push(callsReply(fakeCall{r.Call, args}))
		} else {
			f.push(textReply(r.Text))
		}
	}
	cfgDir, _ := os.MkdirTemp("", "lembas-cli-config")
	stDir, _ := os.MkdirTemp("", "lembas-cli-state")
	proj, _ := os.MkdirTemp("", "lembas-cli-proj")
	proj, _ = filepath.EvalSymlinks(proj)
	defer os.RemoveAll(cfgDir)
	defer os.RemoveAll(stDir)
	defer os.RemoveAll(proj)
	cfgPath := filepath.Join(cfgDir, "lembas", "config.yaml")
	if in.Config != nil {
		os.MkdirAll(filepath.Dir(cfgPath), 0o700)
		os.WriteFile(cfgPath, []byte(*in.Config), 0o600)
	}
	for name, body := range in.Files {
		p := filepath.Join(proj, filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	restore := withEnv(map[string]string{"XDG_CONFIG_HOME": cfgDir, "XDG_STATE_HOME": stDir, "OPENAI_BASE_URL": f.url(),
		"OPENAI_API_KEY": "x", "LEMBAS_MODEL": "mock", "HOME": proj})
	defer restore()
	args := make([]string, len(in.Args))
	for i, a := range in.Args {
		args[i] = strings.ReplaceAll(a, "PROJECT", proj)
	}
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(""), &stdout, &stderr)
	first, _, _ := strings.Cut(stdout.String(), "\n")
	out := map[string]any{
		"exit":       code,
		"stderr":     strings.ReplaceAll(strings.ReplaceAll(stderr.String(), cfgPath, "CONFIG"), proj, "PROJECT"),
		"stdout_1":   strings.ReplaceAll(first, proj, "PROJECT"),
		"requests":   len(f.got()),
		"fake_model": tb.errs,
	}
	if in.SentHas != "" {
		sent := false
		for _, r := range f.got() {
			sent = sent || bytes.Contains(r.Raw, []byte(in.SentHas))
		}
		out["sent_has"] = sent
	}
	return out, nil
}

func init() { conformanceRunners["cli"] = runCLICase }

// TestCommandsMatchTable: run's dispatch and the table name the same
// commands, so --help, completion and the man page list what runs.
func TestCommandsMatchTable(t *testing.T) {
	c := theCLI()
	var table, dispatch []string
	for _, cmd := range c.Commands {
		if cmd.Name == "version" || cmd.Name == "help" {
			continue // run's own words, before the dispatch
		}
		table = append(table, cmd.Name)
	}
	for n := range commands {
		dispatch = append(dispatch, n)
	}
	sort.Strings(table)
	sort.Strings(dispatch)
	if strings.Join(table, " ") != strings.Join(dispatch, " ") {
		t.Errorf("table %v, dispatch %v", table, dispatch)
	}
	for _, f := range c.Flags {
		if f.Long == "version" || f.Long == "help" {
			continue
		}
		if _, _, err := parseRunFlags([]string{"--" + f.Long + valueFor(f)}); err != nil {
			t.Errorf("--%s is in the table but parseRunFlags refuses it: %v", f.Long, err)
		}
	}
	if lib := theMCP().Library.ConfigKey; !contains(theConfigKeys().TopKeys, lib) {
		t.Errorf("mcp.json's library config_key %q is not a known config key", lib)
	}
}

func valueFor(f cliFlag) string {
	switch {
	case len(f.Values) > 0:
		return "=" + f.Values[0]
	case f.Value == "N":
		return "=3"
	case f.Value != "":
		return "=x"
	}
	return ""
}

// TestEveryCommandHelp: `lembas NAME --help` (and -h) prints that
// command's help and exits 0, for every command in the table, without
// touching config or state.
func TestEveryCommandHelp(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, cmd := range theCLI().Commands {
		if cmd.Hidden {
			continue
		}
		for _, h := range []string{"--help", "-h"} {
			args := []string{cmd.Name, h}
			if len(cmd.Subcommands) > 0 {
				args = []string{cmd.Name, cmd.Subcommands[0].Name, h}
			}
			var out, errb bytes.Buffer
			code := run(args, strings.NewReader(""), &out, &errb)
			if code != 0 || !strings.HasPrefix(out.String(), "usage: lembas "+cmd.Name) || errb.Len() > 0 {
				t.Errorf("lembas %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out.String(), errb.String())
			}
		}
	}
}

// TestCompletionScripts sources each shell's script in that shell and
// completes a subcommand, a second word, a --mode value and a session id
// (from a state folder with one session in it).
func TestCompletionScripts(t *testing.T) {
	bin := lembasBin(t)
	state := t.TempDir()
	os.MkdirAll(filepath.Join(state, "lembas", "sessions"), 0o700)
	os.WriteFile(filepath.Join(state, "lembas", "sessions", "s-20261201-abcd.jsonl"), []byte("{}\n"), 0o600)
	cfg := t.TempDir()
	os.MkdirAll(filepath.Join(cfg, "lembas"), 0o700)
	os.WriteFile(filepath.Join(cfg, "lembas", "config.yaml"), []byte("connections:\n  local:\n    base_url: http://127.0.0.1:1/v1\n    models: [qwen3]\n"), 0o600)
	t.Setenv("XDG_STATE_HOME", state)
	t.Setenv("XDG_CONFIG_HOME", cfg)
	if ids, _ := completionList("sessions"); !validID("s-20261201-abcd") || len(ids) != 1 {
		t.Skipf("the test session id is not one the store takes: %v", ids)
	}
	script := func(shell string) string {
		var out bytes.Buffer
		if code := run([]string{"completion", shell}, nil, &out, &out); code != 0 {
			t.Fatalf("completion %s: exit %d: %s", shell, code, out.String())
		}
		p := filepath.Join(t.TempDir(), "lembas."+shell)
		os.WriteFile(p, out.Bytes(), 0o644)
		return p
	}
	type probe struct {
		line string // the words typed, the last one being completed
		want []string
	}
	probes := []probe{
		{"lembas ses", []string{"sessions"}},
		{"lembas sessions sh", []string{"show"}},
		{"lembas --mode a", []string{"auto"}},
		{"lembas sessions show s-2026", []string{"s-20261201-abcd"}},
		{"lembas --model lo", []string{"local/qwen3"}},
		{"lembas completion f", []string{"fish"}},
	}
	t.Run("bash", func(t *testing.T) {
		sh, err := exec.LookPath("bash")
		if err != nil {
			t.Skip("no bash")
		}
		s := script("bash")
		for _, p := range probes {
			words := strings.Fields(p.line)
			words[0] = bin
			prog := fmt.Sprintf("source %s\nCOMP_WORDS=(%s); COMP_CWORD=%d\n_lembas\nprintf '%%s\\n' \"${COMPREPLY[@]}\"\n", shQuote(s), shellQuote(words), len(words)-1)
			out, err := exec.Command(sh, "--norc", "--noprofile", "-c", prog).CombinedOutput()
			checkCompletion(t, "bash", p.line, string(out), err, p.want)
		}
	})
	t.Run("zsh", func(t *testing.T) {
		sh, err := exec.LookPath("zsh")
		if err != nil {
			t.Skip("no zsh")
		}
		s := script("zsh")
		for _, p := range probes {
			words := strings.Fields(p.line)
			words[0] = bin
			// compadd is zsh's builtin only inside completion widgets; a
			// stand-in prints what it is given, after its options.
			prog := fmt.Sprintf("compadd() { while [[ $1 == -* && $1 != -- ]]; do shift; done; [[ $1 == -- ]] && shift; print -l -- \"$@\" }\n"+
				"_files() { }\nsource %s\nwords=(%s); CURRENT=%d\n_lembas\n", shQuote(s), shellQuote(words), len(words))
			out, err := exec.Command(sh, "-f", "-c", prog).CombinedOutput()
			// compadd offers every candidate; zsh filters by the prefix
			// typed, so the stand-in's list is filtered here the same way.
			checkCompletion(t, "zsh", p.line, prefixed(string(out), words[len(words)-1]), err, p.want)
		}
	})
	t.Run("fish", func(t *testing.T) {
		sh, err := exec.LookPath("fish")
		if err != nil {
			t.Skip("no fish")
		}
		s := script("fish")
		dir := t.TempDir()
		os.Symlink(bin, filepath.Join(dir, "lembas"))
		for _, p := range probes {
			prog := fmt.Sprintf("source %s\ncomplete -C %s\n", shQuote(s), shQuote(p.line))
			cmd := exec.Command(sh, "--no-config", "-c", prog)
			cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "HOME="+t.TempDir())
			out, err := cmd.CombinedOutput()
			var words []string
			for _, l := range strings.Split(string(out), "\n") {
				w, _, _ := strings.Cut(l, "\t")
				words = append(words, w)
			}
			checkCompletion(t, "fish", p.line, strings.Join(words, "\n"), err, p.want)
		}
	})
}

// prefixed keeps the lines of out that start with cur.
func prefixed(out, cur string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, cur) && l != "" {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

func checkCompletion(t *testing.T, shell, line, out string, err error, want []string) {
	t.Helper()
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			got = append(got, l)
		}
	}
	if err != nil || strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("%s: %q completes to %q, want %q (%v)\n%s", shell, line, got, want, err, out)
	}
}

// TestManPage: the page is roff that man (or groff, or mandoc) reads
// without a warning, and it names every command and main flag.
func TestManPage(t *testing.T) {
	var out bytes.Buffer
	if code := run([]string{"man"}, nil, &out, &out); code != 0 {
		t.Fatalf("lembas man: exit %d: %s", code, out.String())
	}
	page := out.String()
	for _, cmd := range visible(theCLI()) {
		if !strings.Contains(page, `\fBlembas\fR `+roff(cmd.Usage[0])) {
			t.Errorf("the page lacks the command %s", cmd.Name)
		}
	}
	for _, f := range theCLI().Flags {
		if !strings.Contains(page, roff("--"+f.Long)) {
			t.Errorf("the page lacks --%s", f.Long)
		}
	}
	for _, l := range strings.Split(page, "\n") {
		if strings.ContainsFunc(l, func(r rune) bool { return r > 126 }) {
			t.Errorf("a line past ASCII (roff wants glyph names): %q", l)
		}
	}
	p := filepath.Join(t.TempDir(), "lembas.1")
	os.WriteFile(p, out.Bytes(), 0o644)
	var cmd *exec.Cmd
	switch {
	case haveCmd("groff"):
		cmd = exec.Command("groff", "-man", "-Tutf8", "-ww", "-z", p)
	case haveCmd("mandoc"):
		cmd = exec.Command("mandoc", "-Tlint", "-Wwarning", p)
	default:
		t.Skip("neither groff nor mandoc to read the page")
	}
	if res, err := cmd.CombinedOutput(); err != nil || len(bytes.TrimSpace(res)) > 0 {
		t.Errorf("%s: %v\n%s", cmd.Args[0], err, res)
	}
	if haveCmd("man") {
		res, err := exec.Command("man", "-l", p).CombinedOutput()
		if err != nil || !bytes.Contains(res, []byte("SYNOPSIS")) || !bytes.Contains(res, []byte("completion bash|zsh|fish")) {
			t.Errorf("man -l: %v\n%s", err, res)
		}
	}
}

func haveCmd(name string) bool { _, err := exec.LookPath(name); return err == nil }

// TestHelpNamesEveryCommand: --help draws every visible command and flag
// from the table.
func TestHelpNamesEveryCommand(t *testing.T) {
	h := usageText()
	for _, cmd := range visible(theCLI()) {
		for _, u := range cmd.Usage {
			if !strings.Contains(h, "lembas "+u) {
				t.Errorf("--help lacks %q", u)
			}
		}
	}
	for _, f := range theCLI().Flags {
		if !strings.Contains(h, f.flagName()) {
			t.Errorf("--help lacks %s", f.flagName())
		}
	}
	for _, e := range theCLI().Exit {
		if !strings.Contains(h, fmt.Sprintf("  %d ", e.Code)) {
			t.Errorf("--help lacks exit status %d", e.Code)
		}
	}
}

// FuzzUnknownCommand: the first-word check reads whatever a person typed;
// it never panics, refuses only single words, and a refusal is the
// table's sentence, exit 2's.
func FuzzUnknownCommand(f *testing.F) {
	for _, s := range []string{"sesions", "jobs", "fix the bug", "Sessions", "-p", "", "é", "sessionsss", "\x00", "mcp2"} {
		f.Add(s, "list")
	}
	f.Fuzz(func(t *testing.T, first, second string) {
		msg := unknownCommand([]string{first, second})
		if msg == "" {
			return
		}
		if strings.ContainsAny(first, " \t\n") || strings.HasPrefix(first, "-") || first == "" {
			t.Fatalf("%q refused as a command: %s", first, msg)
		}
		if !strings.HasPrefix(msg, `unknown command "`) {
			t.Fatalf("refusal %q", msg)
		}
	})
}
