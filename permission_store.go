package main

// Always answers: what the person allowed beyond one call. A "session"
// answer lives as long as the session's permissions; a "project" answer is
// kept in stateDir()/permissions/<hash of the project path>.json and read
// by every later session of that project. For bash an answer stores the
// arity pattern of each command of the line (`git status *`, never
// `git *`), so allowing `git status` never allows `git push --force`; for
// any other tool it stores the tool itself. Answers to questions the mode
// did not ask (confirm: always, a rule's ask, a protected or outside path,
// an unparseable line) are never remembered: request never offers them.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// projectAnswers is the file of one project's always answers.
type projectAnswers struct {
	Project string   `json:"project"`
	Allow   []string `json:"allow"`
}

// alwaysFile is where a project's always answers are kept.
func alwaysFile(root string) string {
	sum := sha256.Sum256([]byte(root))
	return filepath.Join(stateDir(), "permissions", hex.EncodeToString(sum[:8])+".json")
}

// loadProject reads the project's always answers. A file that does not
// parse is set aside (renamed .corrupt) and reported, never silently used
// or dropped.
func (p *permissions) loadProject() {
	p.projectFile = alwaysFile(p.root)
	data, err := os.ReadFile(p.projectFile)
	if errors.Is(err, fs.ErrNotExist) {
		return
	}
	var pa projectAnswers
	if err == nil {
		err = json.Unmarshal(data, &pa)
	}
	var rules []sourcedRule
	if err == nil {
		for _, s := range pa.Allow {
			r, perr := parseRule(s)
			if perr != nil {
				err = perr
				break
			}
			rules = append(rules, sourcedRule{r, "project"})
		}
	}
	if err != nil || (pa.Project != "" && pa.Project != p.root) {
		aside := p.projectFile + "." + time.Now().Format("20060102-150405") + ".corrupt"
		os.Rename(p.projectFile, aside)
		p.warnings = append(p.warnings, fmt.Sprintf("the always answers in %s could not be read (%v); set aside as %s", p.projectFile, err, aside))
		return
	}
	p.project = rules
}

// remember keeps an answer of scope session or project for a call the
// mode asked about: for bash the patterns of the decision, else the tool.
func (p *permissions) remember(t *toolSpec, d decision, scope string) error {
	var texts []string
	if t.Name == theArityShellTool() || len(d.Patterns) > 0 { // bash's commands, webfetch's host
		for _, pat := range d.Patterns {
			texts = append(texts, t.Name+": "+pat)
		}
	} else {
		texts = []string{t.Name}
	}
	var rules []sourcedRule
	for _, s := range texts {
		r, err := parseRule(s)
		if err != nil {
			return err
		}
		rules = append(rules, sourcedRule{r, scope})
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	switch scope {
	case "session":
		p.session = appendNew(p.session, rules)
		return nil
	case "project":
		p.project = appendNew(p.project, rules)
		// The file as it is now, plus the new answers: what another
		// process revoked meanwhile (lembas permissions revoke) stays gone.
		pa, err := readProjectAnswers(p.projectFile)
		if err != nil {
			return err // kept for this session; the file is left as it is
		}
		pa.Project = p.root
		for _, r := range rules {
			if !contains(pa.Allow, r.Text) {
				pa.Allow = append(pa.Allow, r.Text)
			}
		}
		data, _ := json.MarshalIndent(pa, "", "  ")
		return writeFileAtomic(p.projectFile, append(data, '\n'), 0o600)
	}
	return errorf("unknown answer scope %q; use session or project", scope)
}

// appendNew adds rules not already in list.
//
//go:noinline
func appendNew(list, add []sourcedRule) []sourcedRule {
	for _, r := range add {
		dup := false
		for _, have := range list {
			if have.Text == r.Text {
				dup = true
			}
		}
		if !dup {
			list = append(list, r)
		}
	}
	return list
}
