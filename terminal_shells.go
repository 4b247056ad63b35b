package main

// Which shell a terminal runs and how: the device user's login shell (from
// /etc/passwd), else $SHELL, else the system's (ptyDefaultShell); as a
// login shell; and for bash, zsh and fish, unless remote.terminal_integration
// is false, through the rc wrappers of harness/terminal/, which read the
// user's own startup files first and then mark every prompt with OSC 133
// and OSC 7. Each terminal's wrappers are written, filled, to a private
// temporary directory (mode 0700) that is removed when it ends. Nothing in
// the user's environment changes but TERM (and, for zsh, ZDOTDIR while it
// starts, given back as the user had it).

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// shellLaunch is how one terminal's shell is started.
type shellLaunch struct {
	path        string
	argv        []string
	env         []string
	kind        string // bash, zsh, fish or other
	integration bool
	rcDir       string // the wrappers' directory, or ""
}

// loginShell is the device user's shell.
func loginShell() string {
	if f, err := os.Open("/etc/passwd"); err == nil {
		sh := passwdShell(f, os.Getuid())
		f.Close()
		if usableShell(sh) {
			return sh
		}
	}
	if sh := os.Getenv("SHELL"); usableShell(sh) {
		return sh
	}
	return ptyDefaultShell()
}

// passwdShell reads the shell of uid from a passwd file: seven fields
// separated by colons, the seventh the shell. Malformed lines are passed
// over.
func passwdShell(r io.Reader, uid int) string {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 1<<20)
	want := strconv.Itoa(uid)
	for sc.Scan() {
		f := strings.Split(sc.Text(), ":")
		if len(f) == 7 && f[2] == want {
			return f[6]
		}
	}
	return ""
}

// usableShell says whether sh is an absolute path to an executable that is
// a shell: nologin and false end the session at once.
func usableShell(sh string) bool {
	if sh == "" || !filepath.IsAbs(sh) {
		return false
	}
	base := strings.TrimSuffix(filepath.Base(sh), ".exe")
	for _, n := range theTerminalSpec().NotShells {
		if base == n {
			return false
		}
	}
	fi, err := os.Stat(sh)
	return err == nil && !fi.IsDir()
}

// shellKind names a shell by its file: bash, zsh, fish, or other.
func shellKind(sh string) string {
	base := strings.ToLower(strings.TrimSuffix(filepath.Base(sh), ".exe"))
	for _, k := range theTerminalSpec().Shells {
		if base == k {
			return k
		}
	}
	return "other"
}

// setEnv returns env with key set to value, in place of any it had.
//
//go:noinline
func setEnv(env []string, key, value string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return append(out, key+"="+value)
}

// lookEnv is env's value of key.
func lookEnv(env []string, key string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// shQuote quotes s for sh, bash and zsh: in single quotes, each quote
// inside closed, escaped with a backslash and opened again.
//
//go:noinline
func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// fishQuote quotes s for fish, whose single quotes take \\ and \'.
func fishQuote(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// shellLaunchFor says how to start sh: a login shell, through its rc
// wrapper when integrate and it is bash, zsh or fish.
func shellLaunchFor(sh string, integrate bool, env []string, sp *terminalSpec) (ln shellLaunch, err error) {
	ln = shellLaunch{path: sh, kind: shellKind(sh), env: setEnv(env, "TERM", sp.Term)}
	base := filepath.Base(sh)
	if runtime.GOOS == "windows" {
		// No login shells and no integration there yet: the shell as it is.
		ln.argv = []string{sh}
		return ln, nil
	}
	ln.argv = []string{"-" + base} // a leading dash: a login shell, to every shell
	if !integrate || ln.kind == "other" {
		return ln, nil
	}
	host, _ := os.Hostname()
	ln.rcDir, err = os.MkdirTemp("", "lembas-term-")
	if err != nil {
		return ln, errorf("making the shell integration's directory: %v", err)
	}
	defer func() {
		if err != nil {
			os.RemoveAll(ln.rcDir)
			ln.rcDir = ""
		}
	}()
	write := func(name, spec string, kv ...any) error {
		b, err := harnessFS.ReadFile("harness/terminal/" + spec)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(ln.rcDir, name), []byte(fillPairs(string(b), kv...)), 0o600)
	}
	switch ln.kind {
	case "bash":
		rc := filepath.Join(ln.rcDir, "bashrc")
		if err = write("bashrc", "bash.sh", "host", shQuote(host)); err != nil {
			return ln, err
		}
		// Interactive, not login: bash would not read --init-file as a
		// login shell, so the wrapper reads the login files itself.
		ln.argv = []string{base, "--init-file", rc, "-i"}
	case "zsh":
		uzd, set := lookEnv(env, "ZDOTDIR")
		isSet := ""
		if set {
			isSet = "1"
		}
		files := [][2]string{{".zshenv", "zshenv.zsh"}, {".zprofile", "zprofile.zsh"}, {".zshrc", "zshrc.zsh"}, {".zlogin", "zlogin.zsh"}}
		for _, f := range files {
			if err = write(f[0], f[1], "zdotdir", shQuote(ln.rcDir), "host", shQuote(host), "user_zdotdir", shQuote(uzd), "user_zdotdir_set", shQuote(isSet)); err != nil {
				return ln, err
			}
		}
		ln.env = setEnv(ln.env, "ZDOTDIR", ln.rcDir)
	case "fish":
		rc := filepath.Join(ln.rcDir, "lembas.fish")
		if err = write("lembas.fish", "fish.fish", "host", fishQuote(host)); err != nil {
			return ln, err
		}
		ln.argv = []string{base, "-l", "--init-command", "source " + fishQuote(rc)}
	}
	ln.integration = true
	return ln, nil
}
