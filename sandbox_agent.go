package main

// The project's agent and editor configuration at its root (hardline.json
// paths.agent_config's **/NAME patterns): what of it is read-only to
// commands (policyParts.Agent), and a denial that names it.

import (
	"bytes"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"hash"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// agentConfigRoots is the project's agent and editor configuration at its
// root: each **/NAME pattern of hardline.json paths.agent_config (.vscode,
// .claude, .mcp.json, .envrc, …) in the project folder.
func agentConfigRoots(root, gitDir string, isGit bool) []string {
	var found []string
	for _, name := range agentConfigNames() {
		p := filepath.Join(root, name)
		if fi, err := os.Lstat(p); err == nil && (fi.IsDir() || fi.Mode().IsRegular()) {
			found = append(found, p)
		}
	}
	if len(found) == 0 || !isGit {
		return uniq(found)
	}
	// The index is read only when there is something to ask it: the
	// policy is worked out again whenever the git folder changes.
	index, _ := os.ReadFile(filepath.Join(gitDir, "index"))
	var out []string
	for _, p := range found {
		if !gitTracks(index, filepath.Base(p)) {
			out = append(out, p)
		}
	}
	return uniq(out)
}

// gitTracks says whether the git index (its bytes) names name or a file
// under it: its paths are stored whole (index versions 2 and 3), each
// ending in a NUL. A match elsewhere (sub/.vscode/x) also counts: git
// writes there too. Version 4 compresses paths, and a name it hides reads
// as untracked: protected, as before.
func gitTracks(index []byte, name string) bool {
	if len(index) == 0 {
		return false
	}
	return bytes.Contains(index, []byte(name+"/")) || bytes.Contains(index, []byte(name+"\x00"))
}

// agentConfigPatterns is hardline.json paths.agent_config's patterns,
// read alone: the world's plan needs them when it starts (in the
// background of every -p), and the whole floor's parse and compile, which
// a session that never runs a command never needs, is not paid for them.
func agentConfigPatterns() []string {
	agentPatsOnce.Do(func() { agentPats = readAgentConfigPatterns() })
	return agentPats
}

var (
	agentPatsOnce sync.Once // a plain Once: sync.OnceValue allocates at init (TestStartupDoesNoWork)
	agentPats     []string
)

func readAgentConfigPatterns() []string {
	var h struct {
		Paths struct {
			AgentConfig struct {
				Patterns []string `json:"patterns"`
			} `json:"agent_config"`
		} `json:"paths"`
	}
	data, err := fs.ReadFile(harnessFS, "harness/permission/hardline.json")
	if err == nil {
		err = decodeHarnessFile("harness/permission/hardline.json", data, &h, false)
	}
	if err != nil {
		return nil
	}
	return h.Paths.AgentConfig.Patterns
}

// agentNamed says whether a denial line names one of the project's agent
// configuration roots (as a command in the project spells it: .vscode/x).
func agentNamed(what string, agent []string) bool {
	for _, a := range agent {
		b := filepath.Base(a)
		if i := strings.Index(what, b); i >= 0 && (i == 0 || strings.ContainsRune(" /'\"`:", rune(what[i-1]))) {
			if j := i + len(b); j == len(what) || strings.ContainsRune(" /'\"`:", rune(what[j])) {
				return true
			}
		}
	}
	return false
}

// agentConfigWatched is the project's agent and editor configuration at
// its root (hardline.json paths.agent_config's **/NAME patterns) that a
// command could add to unseen: each name that is not there, and each
// folder of them there that git tracks (bound is the untracked, which
// the world binds read-only). What a command adds there that git does not
// track is taken away after it (agentMade) — a new .envrc,
// .vscode/tasks.json or .mcp.json would run the command's program in the
// person's shell, editor or next session, where no world holds it.
func agentConfigWatched(root string, bound []string) []string {
	isBound := map[string]bool{}
	for _, b := range bound {
		isBound[b] = true
	}
	var out []string
	for _, name := range agentConfigNames() {
		p := filepath.Join(root, name)
		fi, err := os.Lstat(p)
		if errors.Is(err, fs.ErrNotExist) || err == nil && fi.IsDir() && !isBound[p] {
			out = append(out, p)
		}
	}
	return out
}

// agentConfigNames is the patterns' names at the project's root.
func agentConfigNames() []string {
	var out []string
	for _, pat := range agentConfigPatterns() {
		name, ok := strings.CutPrefix(pat, "**/")
		if ok && name != "" && !strings.ContainsAny(name, "*?[/") {
			out = append(out, name)
		}
	}
	return uniq(out)
}

// agentMade removes what the command added to the agent configuration
// (where there was none, or in a folder git tracks) that git did not
// write from history (gitWrote), and says so ("" when it added none).
// What it changed or removed of what was there is left: a checkout writes
// what git tracks.
func (r *sandboxRun) agentMade() string {
	if len(r.agent.changed()) == 0 {
		return ""
	}
	shown, err := r.agent.removeAdded(r.sb.root, gitWrote(r.sb.root, r.world))
	switch {
	case err != nil:
		return sandboxText("agent_remove_failed", "paths", strings.Join(shown, ", "), "error", err)
	case len(shown) == 0:
		return ""
	}
	return sandboxText("agent_removed", "paths", shownList(shown, theSandboxSpec().GitGoneMax))
}

// gitWrote says whether git wrote a path of the project (rel) from
// history: what is there is what HEAD has there (a checkout, a pull, a
// stash), and HEAD's commit is not one the session made (in the world:
// its objects layer). That the index tracks it is not enough, nor is a
// commit of the session's own: "git add .envrc" or a commit of it in the
// same script would keep what the command wrote. Host git answers (only
// for what a command added there, so seldom); without it, nothing is kept.
//
//go:noinline
func gitWrote(root string, w worldRunner) func(path, rel string) bool {
	head := ""
	return func(path, rel string) bool {
		if head == "" {
			head = "-"
			out, err := hostGit(root, "HEAD^{commit}")
			made, ok := w.(gitMade)
			if err == nil && !(ok && made.gitObjectMade(out)) {
				head = out
			}
		}
		want, err := hostGit(root, head+":"+filepath.ToSlash(rel))
		fi, lerr := os.Lstat(path)
		if head == "-" || err != nil || lerr != nil {
			return false
		}
		if fi.IsDir() {
			return true // HEAD has it; what is in it is judged name by name
		}
		var data []byte
		if fi.Mode()&fs.ModeSymlink != 0 {
			t, _ := os.Readlink(path)
			data = []byte(t)
		} else if data, err = os.ReadFile(path); err != nil || !fi.Mode().IsRegular() {
			return false
		}
		return gitBlobID(data, len(want)) == want
	}
}

// gitMade is a world that knows the git objects its commands made.
type gitMade interface{ gitObjectMade(id string) bool }

// hostGit is what git rev-parse says of one name in the project's
// repository (run by lembas, outside any world: its config is the
// person's, which commands cannot change).
func hostGit(root, name string) (string, error) {
	cmd := exec.Command("git", "-C", root, "rev-parse", "-q", "--verify", name)
	cmd.Env = append(os.Environ(), "GIT_OPTIONAL_LOCKS=0")
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// gitBlobID is the id git gives a blob of data (SHA-256 where the
// repository's ids are 64 hex digits long).
func gitBlobID(data []byte, idLen int) string {
	var h hash.Hash = sha1.New()
	if idLen == 64 {
		h = sha256.New()
	}
	h.Write(append(strconv.AppendInt([]byte("blob "), int64(len(data)), 10), 0))
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil))
}

// closeAdded, when the session ends and its world's processes are gone,
// takes away what was added since its first command to git's protected
// paths (a commondir, a submodule's config, a worktree) and to the agent
// configuration: each command's own look is made when it ends, and a
// process it left running (a job) could plant after the last one.
func (s *sandbox) closeAdded() {
	taken := false
	s.baseOnce.Do(func() { taken = true }) // no command ran: nothing to compare
	if taken {
		return
	}
	s.base.removeAdded(s.root, nil)
	s.baseAgent.removeAdded(s.root, gitWrote(s.root, s.world))
	s.base.close()
	s.baseAgent.close()
	s.base, s.baseAgent = gitSnapshot{}, gitSnapshot{} // a second close compares nothing
}
