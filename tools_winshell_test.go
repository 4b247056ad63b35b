package main

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestWindowsShellChoice: on Windows the bash tool runs bash where it is
// installed (on PATH, Git for Windows' folders, MSYS2) and never WSL's
// launcher in System32; else cmd.exe. The lookups are injected.
func TestWindowsShellChoice(t *testing.T) {
	env := map[string]string{"ProgramFiles": `C:\Program Files`, "LOCALAPPDATA": `C:\Users\me\AppData\Local`, "COMSPEC": `C:\Windows\System32\cmd.exe`}
	getenv := func(k string) string { return env[k] }
	cases := []struct {
		name  string
		path  string   // what PATH gives for bash.exe
		files []string // what exists
		want  string
	}{
		{"on PATH", `C:\Program Files\Git\usr\bin\bash.exe`, nil, `C:\Program Files\Git\usr\bin\bash.exe`},
		{"WSL launcher skipped", `C:\Windows\System32\bash.exe`, []string{`C:\Program Files\Git\bin\bash.exe`}, `C:\Program Files\Git\bin\bash.exe`},
		{"Git for Windows", "", []string{`C:\Program Files\Git\bin\bash.exe`}, `C:\Program Files\Git\bin\bash.exe`},
		{"Git per user", "", []string{`C:\Users\me\AppData\Local\Programs\Git\bin\bash.exe`}, `C:\Users\me\AppData\Local\Programs\Git\bin\bash.exe`},
		{"MSYS2", "", []string{`C:\msys64\usr\bin\bash.exe`}, `C:\msys64\usr\bin\bash.exe`},
		{"none: cmd.exe", `C:\Windows\System32\bash.exe`, nil, `C:\Windows\System32\cmd.exe`},
	}
	for _, c := range cases {
		exists := func(p string) bool {
			for _, f := range c.files {
				if f == p {
					return true
				}
			}
			return false
		}
		look := func(string) (string, error) {
			if c.path == "" {
				return "", errors.New("not found")
			}
			return c.path, nil
		}
		if got := windowsShell(getenv, exists, look); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
	for shell, kind := range map[string]string{`C:\Windows\System32\cmd.exe`: "cmd", "CMD.EXE": "cmd", "pwsh.exe": "powershell", `C:\x\powershell.exe`: "powershell", `C:\Program Files\Git\bin\bash.exe`: "sh", "/bin/bash": "sh", "/bin/sh": "sh"} {
		if got := lineShellKind(shell); got != kind {
			t.Errorf("lineShellKind(%s) = %s, want %s", shell, got, kind)
		}
	}
}

// TestShellNamedWhenNotBash: where the shell is cmd.exe, the bash tool's
// description says so and so does every result, so a bash line is not sent
// to it unknowing; with bash neither says anything. A stand-in "cmd" (a
// script taking /C LINE) runs the command on this system.
func TestShellNamedWhenNotBash(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the stand-in cmd is a shell script")
	}
	tb := newTestToolbox(t, nil)
	desc := func() string {
		raw, err := tb.definitions()
		if err != nil {
			t.Fatal(err)
		}
		var defs []struct {
			Function struct {
				Name        string `json:"name"`
				Description string `json:"description"`
			} `json:"function"`
			Name        string `json:"name"`
			Description string `json:"description"`
		}
		json.Unmarshal(raw, &defs)
		for _, d := range defs {
			if d.Name == "bash" {
				return d.Description
			}
			if d.Function.Name == "bash" {
				return d.Function.Description
			}
		}
		t.Fatalf("no bash in %s", raw)
		return ""
	}
	tb.shell = "/bin/sh"
	if d := desc(); strings.Contains(d, "not bash") {
		t.Errorf("sh's description: %s", d)
	}
	if r := call(t, tb, "bash", map[string]any{"command": "echo hi"}); strings.Contains(r.Text, "not bash") {
		t.Errorf("sh's result: %s", r.Text)
	}
	fake := filepath.Join(tb.root, "cmd") // in the project: a world (Linux) shows the project, not the host's /tmp
	os.WriteFile(fake, []byte("#!/bin/sh\n[ \"$1\" = /C ] || exit 9\nexec /bin/sh -c \"$2\"\n"), 0o755)
	tb.shell = fake
	if d := desc(); !strings.Contains(d, "This is cmd.exe, not bash") {
		t.Errorf("cmd's description does not say so: %s", d)
	}
	r := call(t, tb, "bash", map[string]any{"command": "echo hi"})
	if !strings.Contains(r.Text, "hi") || !strings.Contains(r.Text, "[ran in cmd, not bash]") {
		t.Errorf("cmd's result: %s", r.Text)
	}
}
