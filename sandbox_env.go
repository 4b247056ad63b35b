package main

// The environment a model's command gets: lembas's own, without what would
// hand it a secret or a way out — variables whose names hold KEY, SECRET,
// TOKEN, PASSWORD or CREDENTIAL, and the agent and server sockets (ssh,
// gpg, tmux, D-Bus, docker) — unless config.yaml's sandbox.env keeps them.
// This holds with no OS sandbox as well. Inside the sandbox it also points
// the command at the proxy, at the world's private /tmp, and (without a
// world) the build caches at the session's folders. The lists are
// harness/sandbox.json's env.

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// envDropped says whether a variable is kept from commands.
func (s *sandbox) envDropped(name string) bool {
	for _, k := range s.cfg.Env {
		if k == name {
			return false
		}
	}
	sp := theSandboxSpec()
	for _, d := range sp.Env.Drop {
		if d == name {
			return true
		}
	}
	up := strings.ToUpper(name)
	for _, sub := range sp.Env.DropSubstrings {
		if strings.Contains(up, sub) {
			return true
		}
	}
	for _, k := range sp.Env.Keep {
		if k == name {
			return false
		}
	}
	for _, w := range strings.Split(up, "_") {
		for _, d := range sp.Env.DropWords {
			if w == d {
				return true
			}
		}
	}
	return false
}

// envValueSecret says whether a value is a secret by its look, whatever
// its variable's name: a URL carrying a password (scheme://user:pass@),
// the start of a well-known token (ghp_, sk-ant-, xoxb-, AKIA…) or a PEM
// block, or a piece only a secret holds (a private key's PEM line, a
// URL's token= or sig=, a webhook's path).
func (s *sandbox) envValueSecret(v string) bool {
	sp := theSandboxSpec()
	for _, p := range sp.Env.DropPrefixes {
		if strings.HasPrefix(v, p) {
			return true
		}
	}
	if len(sp.Env.DropValueSubs) > 0 {
		low := strings.ToLower(v)
		for _, sub := range sp.Env.DropValueSubs {
			if strings.Contains(low, strings.ToLower(sub)) {
				return true
			}
		}
	}
	if !sp.Env.DropURLPass {
		return false
	}
	for rest := v; ; {
		i := strings.Index(rest, "://")
		if i < 0 {
			return false
		}
		rest = rest[i+3:]
		auth := rest
		if j := strings.IndexAny(auth, "/?#"); j >= 0 {
			auth = auth[:j]
		}
		if at := strings.LastIndexByte(auth, '@'); at > 0 {
			if _, pass, ok := strings.Cut(auth[:at], ":"); ok && pass != "" {
				return true
			}
		}
	}
}

// envKept says whether config's sandbox.env keeps the variable.
func (s *sandbox) envKept(name string) bool {
	for _, k := range s.cfg.Env {
		if k == name {
			return true
		}
	}
	return false
}

// scrubEnv is env without the dropped variables, and their names. kept is
// never nil: to exec.Cmd and to the world's start a nil Env means "inherit
// lembas's own", which would hand back every variable dropped here.
func (s *sandbox) scrubEnv(env []string) (kept, dropped []string) {
	kept = make([]string, 0, len(env))
	// Every command brings the same names: each is judged once a session.
	s.envMu.Lock()
	defer s.envMu.Unlock()
	if s.envMemo == nil {
		s.envMemo = map[string]bool{}
	}
	for _, kv := range env {
		name, val, _ := strings.Cut(kv, "=")
		drop, known := s.envMemo[name]
		if !known {
			drop = s.envDropped(name)
			if len(s.envMemo) < 4096 {
				s.envMemo[name] = drop
			}
		}
		if !drop && !s.envKept(name) && s.envValueSecret(val) {
			drop = true // by its value: judged each time, not remembered by name
		}
		if drop {
			dropped = append(dropped, name)
			continue
		}
		kept = append(kept, kv)
	}
	sort.Strings(dropped)
	return kept, uniq(dropped)
}

// proxyVars are the variables that send a command's HTTP through the proxy
// listening on 127.0.0.1:port (both spellings: tools read one or the other).
var proxyVars = []string{"HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"}

// commandEnv is the environment one command runs with.
func (s *sandbox) commandEnv(env []string, r *sandboxRun) []string {
	env, _ = s.scrubEnv(env)
	if r.bare {
		return env
	}
	return s.sandboxEnv(env, r)
}

// cacheMissing says whether the cache variable k is unset in env and the
// folder its tool would use then does not exist: in the world there is
// nothing to overlay, and a first build could not make its cache in the
// read-only home.
func cacheMissing(k string, env []string) bool {
	for _, kv := range env {
		if name, v, _ := strings.Cut(kv, "="); name == k && v != "" {
			return false
		}
	}
	for _, e := range theSandboxSpec().CacheDefault[k] {
		if p, ok := expandRoot(e, os.Getenv, homeDir()); ok {
			_, err := os.Stat(p)
			return err != nil
		}
	}
	return false
}

// sandboxEnv adds to env what the sandbox sets: the proxy, the world's
// /tmp, the caches without a world.
func (s *sandbox) sandboxEnv(env []string, r *sandboxRun) []string {
	set := map[string]string{}
	port := 0
	if s.networkMode() == "proxy" {
		if r.world != nil {
			port = theSandboxSpec().Proxy.Port
		} else if p := s.fallbackProxy(); p != nil {
			port = p.port
		}
	}
	if port > 0 {
		for _, k := range proxyVars {
			set[k] = fmt.Sprintf("http://127.0.0.1:%d", port)
		}
		set["NO_PROXY"], set["no_proxy"] = "localhost,127.0.0.1,::1", "localhost,127.0.0.1,::1"
	}
	if r.world != nil {
		if r.world.privateTmp() {
			set["TMPDIR"] = "/tmp" // the host's may be a folder the world does not show
			for k, sub := range theSandboxSpec().CacheEnv {
				if cacheMissing(k, env) {
					set[k] = "/tmp/.cache/" + sub
				}
			}
		}
	} else if dir, err := s.sessionDir(); err == nil {
		sp := theSandboxSpec()
		for k, sub := range sp.CacheEnv {
			if !s.cacheWritable(k) && (!slices.Contains(sp.CacheEnvKept, k) || cacheMissing(k, env)) {
				set[k] = filepath.Join(dir, "cache", sub)
			}
		}
	}
	out := env[:0:0]
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if _, ok := set[name]; !ok {
			out = append(out, kv)
		}
	}
	names := make([]string, 0, len(set))
	for k := range set {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		out = append(out, k+"="+set[k])
	}
	return out
}

// cacheWritable says whether config.yaml's sandbox.writable names the
// cache a variable points at (then the command writes it for real).
func (s *sandbox) cacheWritable(name string) bool {
	for _, w := range s.cfg.Writable {
		if strings.HasPrefix(w, "$"+name) {
			return true
		}
	}
	return false
}

// fallbackProxy is the proxy for commands run without a world (on the
// host's loopback), started on first use; nil when it cannot start.
func (s *sandbox) fallbackProxy() *sandboxProxy {
	s.worldMu.Lock()
	defer s.worldMu.Unlock()
	if s.proxy != nil {
		return s.proxy
	}
	dir, err := s.sessionDirLocked()
	if err != nil {
		return nil
	}
	p, err := startSandboxProxy(s, dir)
	if err != nil {
		return nil
	}
	s.proxy = p
	return p
}
