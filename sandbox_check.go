package main

// lembas sandbox check: what is enforced on this machine, as found by
// starting the world (or failing to), not what is configured.

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
)

// cmdSandbox is `lembas sandbox check`: which sandbox this machine gives and
// what a command in this folder may do.
func cmdSandbox(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "check" {
		return usageError{"use: lembas sandbox check [--cwd DIR] [--mode M]"}
	}
	dir, mode := ".", ""
	rest := args[1:]
	for i := 0; i < len(rest); i++ {
		switch rest[i] {
		case "--cwd", "--mode":
			if i+1 >= len(rest) {
				return usageError{rest[i] + " needs a value; use: lembas sandbox check [--cwd DIR] [--mode M]"}
			}
			if rest[i] == "--cwd" {
				dir = rest[i+1]
			} else {
				mode = rest[i+1]
			}
			i++
		default:
			return usageError{fmt.Sprintf("unknown argument %q; use: lembas sandbox check [--cwd DIR] [--mode M]", rest[i])}
		}
	}
	cfg, err := loadConfig()
	if err != nil {
		return err
	}
	root, err := projectRoot(dir)
	if err != nil {
		return usageError{fmt.Sprintf("--cwd %s: %v", dir, err)}
	}
	if mode, err = normMode(mode); err != nil {
		return usageError{err.Error()}
	}
	sb := newSandbox(cfg.Sandbox, root)
	defer sb.close()
	fmt.Fprint(stdout, sb.report(mode))
	return nil
}

// report is `sandbox check`'s text: what is enforced on this machine, as
// found by starting the world (or failing to), not what is configured.
func (s *sandbox) report(mode string) string {
	c := theSandboxSpec().Check
	p := s.probed()
	var b strings.Builder
	line := func(key string, kv ...any) { fillKeyLine(&b, c, key, kv...) }
	var w worldRunner
	if p.Kind == "" {
		line("none", "why", p.Why)
	} else {
		line("head", "kind", p.Kind)
		if p.Kind == "landlock" {
			masked := ""
			if p.Masked != "" {
				masked = fillPairs(c["masked"], "rights", p.Masked)
			}
			line("abi", "abi", p.ABI, "masked", masked)
			w = s.theWorld()
			if w != nil {
				net := ""
				if s.networkMode() != "on" {
					net = c["ns_net"]
				}
				line("namespaces", "how", fillPairs(c["ns_yes"], "net", net))
			} else {
				why := "turned off for this test"
				if !s.noWorld {
					why = ""
				}
				if s.worldErr != nil {
					why = s.worldErr.Error()
				} else if _, w := s.namespaces(); w != "" {
					why = w
				}
				line("namespaces", "how", fillPairs(c["ns_no"], "why", why))
			}
			if !theSandboxSpec().Keyring {
				line("keyring")
			}
		}
	}
	inWorld := w != nil
	parts := s.policyFor(mode, os.Getenv, homeDir())
	pol, missing := s.policyIn(mode, inWorld)
	if p.Kind == "" {
		line("unenforced")
	} else {
		switch {
		case !inWorld && (p.Kind != "landlock" || parts.Home == ""):
			line("read")
		case parts.Home != "":
			readable := "nothing more"
			if len(s.cfg.Readable) > 0 {
				readable = strings.Join(s.cfg.Readable, ", ")
			}
			line("read_home", "readable", readable)
		default:
			if homeAll(s.cfg.Readable) {
				line("read_home_all")
			} else {
				line("read")
			}
		}
		line("write", "roots", showRoots(append(append([]string{}, pol.Write...), pol.Devices...)))
		if len(missing) > 0 {
			line("skipped", "roots", showRoots(missing))
		}
	}
	if p.Kind != "" {
		var caches []string
		for _, r := range parts.Caches {
			if pathExists(r) {
				caches = append(caches, r)
			}
		}
		if len(caches) > 0 && p.Kind == "landlock" {
			how := c["caches_ro"]
			if inWorld {
				how = c["caches_overlay"]
			}
			line("caches", "roots", showRoots(caches), "how", how)
		}
		if inWorld {
			var held []string
			for _, m := range parts.Mask {
				if pathExists(m) {
					held = append(held, m)
				}
			}
			if len(held) > 0 {
				line("masks", "paths", showRoots(held))
			}
			if len(parts.Agent) > 0 {
				line("agent", "paths", showRoots(parts.Agent))
			}
			if prot := notUnder(w.protected(), parts.Agent); len(prot) > 0 {
				var pins []string
				for _, p := range parts.Pin {
					if pathExists(p) {
						pins = append(pins, p)
					}
				}
				key := "git"
				if wh, ok := w.(interface{ gitKept() string }); ok && wh.gitKept() != "overlay" {
					key = "git_pinned"
				}
				line(key, "paths", showRoots(prot), "pins", showRoots(pins))
			}
			sp := theSandboxSpec()
			if w.processBound() {
				line("limits", "procs", sp.Limits.Processes, "bytes", sp.Limits.FileBytes)
			} else {
				line("limits_files", "bytes", sp.Limits.FileBytes)
			}
			if dw, ok := w.(interface{ diskRoots() []string }); ok && len(dw.diskRoots()) > 0 {
				line("disk", "written", sp.Limits.WrittenBytes, "floor", sp.Limits.FreeFloorBytes, "roots", strings.Join(dw.diskRoots(), "; "), "ms", sp.Limits.DiskCheckMS)
			} else {
				line("disk_none")
			}
			if ow, ok := w.(interface{ oomScoreAdj() int }); ok && ow.oomScoreAdj() != 0 {
				line("memory", "adj", ow.oomScoreAdj(), "tmpfs", sp.Limits.TmpfsBytes)
			} else {
				line("memory_no_oom", "tmpfs", sp.Limits.TmpfsBytes)
			}
		} else if p.Kind == "landlock" {
			line("masks_none")
			if prot := notUnder(pol.Protect, parts.Agent); len(prot) > 0 {
				line("git_snap", "paths", showRoots(prot))
			}
			if len(parts.Agent) > 0 {
				line("agent", "paths", showRoots(parts.Agent))
			}
			line("limits_none")
		}
	}
	if _, dropped := s.scrubEnv(os.Environ()); len(dropped) > 0 {
		line("env", "names", strings.Join(dropped, ", "))
	} else {
		line("env_none")
	}
	var state string
	switch {
	case p.Kind == "":
		state = c["network_unenforced"]
	case s.networkMode() == "off":
		state = c["network_off"]
	case s.networkMode() == "proxy" && inWorld:
		state = fillPairs(c["network_proxy"], "hosts", strings.Join(s.allowedHosts(), ", "))
	case s.networkMode() == "proxy":
		state = fillPairs(c["network_proxy_weak"], "hosts", strings.Join(s.allowedHosts(), ", "))
	default:
		state = c["network_on"]
	}
	line("network", "state", state)
	// webfetch's network is lembas's own, kept with an OS sandbox or without.
	switch s.networkMode() {
	case "on":
		line("webfetch", "state", c["webfetch_on"])
	case "off":
		line("webfetch", "state", c["webfetch_off"])
	default:
		hosts := append(append([]string{}, s.cfg.Allow...), s.projectHosts()...)
		if len(hosts) == 0 {
			hosts = []string{c["webfetch_none"]}
		}
		line("webfetch", "state", fillPairs(c["webfetch_proxy"], "hosts", strings.Join(hosts, ", ")))
	}
	line("required", "required", s.required())
	if mode == "plan" {
		line("plan")
	}
	return b.String()
}

// goosName is the OS as a person reads it, for why_os.
func goosName() string { return runtime.GOOS }

// fillKeyLine is fillLine of the text c names key: out of line, so each of
// report's lines costs one call, not a map look-up and a call.
//
//go:noinline
func fillKeyLine(b *strings.Builder, c map[string]string, key string, kv ...any) {
	fillLine(b, c[key], kv...)
}
