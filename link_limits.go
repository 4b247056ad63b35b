package main

// The device's remote limits (config.yaml remote:), read again at every
// request of the link, and the one judgement every folder the instance
// names goes through: inside a root once symlinks are resolved, and in a
// trusted project when require_trust says so.

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
)

// remoteLimits is config.yaml's remote: block as it is now.
type remoteLimits struct {
	Enabled             bool     `json:"-"`
	Roots               []string `json:"roots"` // absolute, symlinks resolved; empty when off
	RequireTrust        bool     `json:"require_trust"`
	MaxMode             string   `json:"max_mode"`
	Terminal            bool     `json:"terminal"`
	TerminalIntegration bool     `json:"-"`
	ApprovalTimeout     int      `json:"-"`
	Scheduled           bool     `json:"scheduled"`
}

// readRemoteLimits reads the remote: block from config.yaml (kept by
// parseConfig as an unknown top-level key), with link.json's defaults for
// what it leaves out. A broken config.yaml gives the defaults with no
// roots, and the error, so the link refuses everything until it is fixed.
func readRemoteLimits() (remoteLimits, error) {
	d := theLinkSpec().RemoteDefaults
	l := remoteLimits{Enabled: d.Enabled, RequireTrust: d.RequireTrust, MaxMode: d.MaxMode, Terminal: d.Terminal,
		TerminalIntegration: d.TerminalIntegration, ApprovalTimeout: d.ApprovalTimeout, Scheduled: d.Scheduled, Roots: []string{}}
	cfg, err := loadConfig()
	if err != nil {
		return l, err
	}
	top, _ := cfg.Raw.(map[string]any)
	r, _ := top["remote"].(map[string]any)
	if r == nil {
		return l, nil
	}
	flag := func(key string, v *bool) error {
		if x, ok := r[key]; ok && x != nil {
			b, ok := x.(bool)
			if !ok {
				return errorf("config.yaml: remote.%s must be true or false, got %v", key, x)
			}
			*v = b
		}
		return nil
	}
	for k, v := range map[string]*bool{"enabled": &l.Enabled, "require_trust": &l.RequireTrust, "terminal": &l.Terminal,
		"terminal_integration": &l.TerminalIntegration, "scheduled": &l.Scheduled} {
		if err := flag(k, v); err != nil {
			return l, err
		}
	}
	if x, ok := r["max_mode"]; ok && x != nil {
		m, err := normMode(fmt.Sprint(x))
		if err != nil {
			return l, errorf("config.yaml: remote.max_mode: %v", err)
		}
		l.MaxMode = m
	}
	if x, ok := r["approval_timeout"]; ok && x != nil {
		switch n := x.(type) {
		case int:
			l.ApprovalTimeout = n
		case int64:
			l.ApprovalTimeout = int(n)
		case float64:
			l.ApprovalTimeout = int(n)
		default:
			return l, errorf("config.yaml: remote.approval_timeout must be a number of seconds, got %v", x)
		}
	}
	if x, ok := r["roots"]; ok && x != nil {
		list, ok := x.([]any)
		if !ok {
			list = []any{x}
		}
		for _, it := range list {
			p := expandTilde(fmt.Sprint(it))
			if !filepath.IsAbs(p) {
				return l, errorf("config.yaml: remote.roots: %s is not an absolute path; write it as /path or ~/path", p)
			}
			if rp, err := filepath.EvalSymlinks(p); err == nil {
				p = rp
			}
			l.Roots = append(l.Roots, filepath.Clean(p))
		}
	}
	if !l.Enabled {
		l.Roots = []string{}
	}
	return l, nil
}

// expandTilde expands a leading ~ to the home folder.
func expandTilde(p string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h, err := os.UserHomeDir(); err == nil {
			return filepath.Join(h, p[1:])
		}
	}
	return p
}

// announced is what hello and initialize say of the limits; a change in it
// is what makes the service relink.
//
//go:noinline
func (l remoteLimits) announced() map[string]any {
	return map[string]any{"roots": l.Roots, "max_mode": l.MaxMode, "require_trust": l.RequireTrust,
		"terminal": l.Terminal, "scheduled": l.Scheduled}
}

func sameAnnounced(a, b remoteLimits) bool { return reflect.DeepEqual(a.announced(), b.announced()) }

// judgeDir says whether the link may work in dir, and why not: the
// resolved directory, or a -32602 error with the reason.
func (l remoteLimits) judgeDir(dir string) (string, *rpcError) {
	sp := theLinkSpec()
	if !l.Enabled {
		return "", &rpcError{Code: rpcInvalidParams, Message: sp.Errors["roots_off"]}
	}
	if len(l.Roots) == 0 {
		return "", &rpcError{Code: rpcInvalidParams, Message: sp.Errors["no_roots"]}
	}
	if !filepath.IsAbs(dir) {
		return "", linkErr("not_dir", "dir", dir)
	}
	real, err := filepath.EvalSymlinks(filepath.Clean(dir))
	if err != nil {
		return "", linkErr("not_dir", "dir", dir)
	}
	if st, err := os.Stat(real); err != nil || !st.IsDir() {
		return "", linkErr("not_dir", "dir", dir)
	}
	in := false
	for _, r := range l.Roots {
		in = in || within(r, real)
	}
	if !in {
		return "", linkErr("outside", "dir", dir, "roots", strings.Join(l.Roots, ", "))
	}
	if l.RequireTrust {
		if t, _ := trustOf(real); !t {
			return "", linkErr("untrusted", "dir", dir)
		}
	}
	return real, nil
}

// lowerMode lowers mode to the device's max_mode, by link.json's rank.
func (l remoteLimits) lowerMode(mode string) string {
	rank := map[string]int{}
	for i, m := range theLinkSpec().ModeRank {
		rank[m] = i
	}
	if mode == "" || rank[mode] > rank[l.MaxMode] {
		return l.MaxMode
	}
	return mode
}

// termLimits are the limits the terminal handler is given.
func (l remoteLimits) termLimits() terminalLimits {
	return terminalLimits{Enabled: l.Terminal && l.Enabled, Integration: l.TerminalIntegration, Roots: l.Roots}
}

// directories answers _lembas/directories.
func (l remoteLimits) directories(path string) (any, error) {
	dir := func(p string) map[string]any {
		d := map[string]any{"path": p, "name": filepath.Base(p), "accepted": true}
		if _, err := l.judgeDir(p); err != nil {
			d["accepted"], d["reason"] = false, err.Message
		}
		return d
	}
	if path == "" {
		places := []map[string]any{}
		for _, r := range l.Roots {
			places = append(places, dir(r))
		}
		return map[string]any{"path": "", "places": places}, nil
	}
	if !filepath.IsAbs(path) {
		return nil, linkErr("not_dir", "dir", path)
	}
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, linkErr("not_dir", "dir", path)
	}
	in := false
	for _, r := range l.Roots {
		in = in || within(r, real)
	}
	if !in {
		return nil, linkErr("outside", "dir", path, "roots", strings.Join(l.Roots, ", "))
	}
	out := dir(real)
	out["parent"] = filepath.Dir(real)
	entries := []map[string]any{}
	list, rerr := os.ReadDir(real)
	for _, e := range list {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			entries = append(entries, dir(filepath.Join(real, e.Name())))
		}
	}
	out["entries"] = entries
	if rerr != nil {
		out["error"] = rerr.Error()
	}
	return out, nil
}
