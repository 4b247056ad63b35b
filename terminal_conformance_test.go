//go:build unix

package main

// The terminal conformance area: _lembas/terminal/open through the real
// handler with a real shell — the limits (on, roots, cwd inside them with
// symlinks followed), the size clamps, the four-per-link cap, and what the
// answer says of the shell. Paths in a case are $ROOT (a root with sub/, a
// file and a symlink "out" to $OUT) and $OUT (outside every root).

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func init() {
	conformanceRunners["terminal"] = runTerminalCase
}

type terminalCase struct {
	Limits struct {
		Enabled     bool     `json:"enabled"`
		Integration bool     `json:"integration"`
		Roots       []string `json:"roots"`
	} `json:"limits"`
	Shell string            `json:"shell"` // a path, or a name looked up in PATH
	Opens []json.RawMessage `json:"opens"`
}

func runTerminalCase(in json.RawMessage) (any, error) {
	var c terminalCase
	if err := json.Unmarshal(in, &c); err != nil {
		return nil, err
	}
	base, err := os.MkdirTemp("", "lembas-termconf-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(base)
	base, _ = filepath.EvalSymlinks(base)
	root, out := filepath.Join(base, "root"), filepath.Join(base, "out")
	os.MkdirAll(filepath.Join(root, "sub"), 0o755)
	os.MkdirAll(out, 0o755)
	os.WriteFile(filepath.Join(root, "file"), nil, 0o644)
	os.Symlink(out, filepath.Join(root, "out"))
	expand := strings.NewReplacer("$ROOT", root, "$OUT", out)
	unexpand := strings.NewReplacer(root, "$ROOT", out, "$OUT")
	lim := terminalLimits{Enabled: c.Limits.Enabled, Integration: c.Limits.Integration}
	for _, r := range c.Limits.Roots {
		lim.Roots = append(lim.Roots, expand.Replace(r))
	}
	sh := c.Shell
	if !filepath.IsAbs(sh) {
		if sh, err = exec.LookPath(sh); err != nil {
			return nil, err
		}
	}
	link := newFakeTermLink()
	ts := newTerminals(link.notify, func() terminalLimits { return lim })
	ts.shell = func() string { return sh }
	ts.env = func() []string { return setEnv(os.Environ(), "HOME", root) }
	defer ts.closeAll()
	var results []any
	for _, o := range c.Opens {
		res, err := ts.request(context.Background(), "_lembas/terminal/open", json.RawMessage(expand.Replace(string(o))))
		if err != nil {
			var re *rpcError
			if !errors.As(err, &re) {
				return nil, err
			}
			results = append(results, map[string]any{"error": re.Code, "message": unexpand.Replace(re.Message)})
			continue
		}
		r := res.(terminalOpenResult)
		if !strings.HasPrefix(r.TerminalID, "term_") {
			return nil, errors.New("terminal id " + r.TerminalID)
		}
		results = append(results, map[string]any{"cwd": unexpand.Replace(r.Cwd), "cols": r.Cols, "rows": r.Rows, "shell": r.Shell, "integration": r.Integration})
	}
	return results, nil
}

// TestTerminalSpec checks harness/terminal.json against what the code
// needs: sizes ordered, the water marks, every error text present.
func TestTerminalSpec(t *testing.T) {
	sp := theTerminalSpec()
	s := sp.Size
	if !(s.MinCols <= s.DefaultCols && s.DefaultCols <= s.MaxCols && s.MinRows <= s.DefaultRows && s.DefaultRows <= s.MaxRows) {
		t.Errorf("sizes out of order: %+v", s)
	}
	if s.MinCols != 20 || s.MaxCols != 500 || s.MinRows != 5 || s.MaxRows != 300 || sp.MaxPerLink != 4 {
		t.Errorf("the seed says 20–500 × 5–300 and four a link: %+v, %d", s, sp.MaxPerLink)
	}
	f := sp.Flow
	if !(0 < f.LowWater && f.LowWater < f.HighWater && f.ReadBytes > 0 && f.MessageBytes >= f.ReadBytes) {
		t.Errorf("flow numbers make no sense: %+v", f)
	}
	if !(0 < sp.HangupNudgeMS && sp.HangupNudgeMS < sp.HangupGraceMS) {
		t.Errorf("the hangup's nudge (%d ms) must come before its kill (%d ms)", sp.HangupNudgeMS, sp.HangupGraceMS)
	}
	for _, k := range []string{"off", "no_roots", "outside", "not_dir", "too_many", "closed", "unknown", "bad_params", "bad_data", "busy", "start"} {
		if sp.Errors[k] == "" {
			t.Errorf("terminal.json has no errors.%s", k)
		}
	}
	for _, f := range []string{"bash.sh", "zshenv.zsh", "zprofile.zsh", "zshrc.zsh", "zlogin.zsh", "fish.fish"} {
		if _, err := harnessFS.ReadFile("harness/terminal/" + f); err != nil {
			t.Errorf("harness/terminal/%s: %v", f, err)
		}
	}
}

// FuzzPasswdShell: any passwd file gives a shell or "", never a crash, and
// the shell found is the seventh field of a line with the uid.
func FuzzPasswdShell(f *testing.F) {
	f.Add("root:x:0:0:root:/root:/bin/bash\nme:x:1000:1000::/home/me:/usr/bin/zsh\n", 1000)
	f.Add("::::::\n:::\n\n", 0)
	f.Add("a:b:7:c:d:e:/bin/fish:extra\nx:x:7:x:x:x:/bin/sh", 7)
	f.Fuzz(func(t *testing.T, passwd string, uid int) {
		sh := passwdShell(strings.NewReader(passwd), uid)
		if sh == "" {
			return
		}
		found := false
		for _, line := range strings.Split(passwd, "\n") {
			f := strings.Split(strings.TrimSuffix(line, "\r"), ":")
			if len(f) == 7 && f[6] == sh {
				found = true
			}
		}
		if !found {
			t.Errorf("shell %q is no line's seventh field", sh)
		}
	})
}

// FuzzTerminalRequest: any method and params give an answer or an
// *rpcError, never a panic. Terminals are off, so nothing is started.
func FuzzTerminalRequest(f *testing.F) {
	for _, m := range []string{"open", "input", "resize", "close", "other"} {
		f.Add("_lembas/terminal/"+m, `{"terminalId":"term_1","data":"aGk=","cols":3,"rows":1e9,"cwd":"/"}`)
	}
	f.Add("_lembas/terminal/input", `{"terminalId":null}`)
	f.Add("_lembas/terminal/open", `[]`)
	f.Fuzz(func(t *testing.T, method, params string) {
		ts := newTerminals(func(string, any) error { return nil }, func() terminalLimits { return terminalLimits{} })
		_, err := ts.request(context.Background(), method, json.RawMessage(params))
		var re *rpcError
		if err != nil && !errors.As(err, &re) {
			t.Errorf("%s %s: %T %v is not an rpcError", method, params, err, err)
		}
		if method == "_lembas/terminal/open" && err == nil {
			t.Errorf("a terminal opened while terminals are off")
		}
	})
}
