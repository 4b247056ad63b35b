package main

// Approvals: one question to the person, asked the same way by every front
// end (the terminal, ACP, the link). A request carries the tool, what it
// would do (the command line or the arguments, and a unified diff of an
// edit), the risk, why
// it is asked and the rule that said so, and the answers on offer:
//
//	once     run this call (with a corrected command line, for bash)
//	session  run it, and the same again this session: for bash every
//	         command's arity pattern (git status *), else the tool
//	project  as session, and kept for this project on disk
//	deny     refuse it, with optional feedback for the model
//
// session and project are offered only where the mode asked (never for
// confirm: always, a rule's ask, a protected or outside path, or a line
// that could not be read). A request not answered within defaults.json's
// approval.timeout_s is a denial; approveWithin is the one place that
// enforces it, so every front end gets it.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// approvalRequest is one question to the person.
type approvalRequest struct {
	CallID  string   `json:"call_id,omitempty"` // the model's id of the call, so a card can name it
	Tool    string   `json:"tool"`
	Input   string   `json:"input"`           // the command line (bash), else the call's arguments as JSON
	Diff    string   `json:"diff,omitempty"`  // what a writing tool would change, as a unified diff
	Paths   []string `json:"paths,omitempty"` // what it touches: relative to the project, absolute outside it
	Risk    string   `json:"risk"`
	Reason  string   `json:"reason"`
	Rule    string   `json:"rule"`    // the rule or table entry that asked
	Options []string `json:"options"` // once, session, project, deny

	Agent string `json:"agent,omitempty"` // the subagent that asks (its job id and agent); "" the session's own

	Purpose string `json:"purpose,omitempty"` // what the model said the call is for (purpose.json); "" none

	// Scopes says in words what each "always" answer on offer would
	// allow (session, project → a sentence), so a card never offers one
	// without saying how far it goes.
	Scopes map[string]string `json:"scopes,omitempty"`
}

// approver is answered by the REPL, ACP, the link — or, headless, by nobody.
type approver interface {
	approve(ctx context.Context, req approvalRequest) approvalAnswer
}

// headlessApprover answers for lembas -p: nobody is there. With a log it
// also keeps the tools it refused, so the run can end saying so.
type headlessApprover struct{ log *refusalLog }

func (h headlessApprover) approve(ctx context.Context, req approvalRequest) approvalAnswer {
	if h.log != nil {
		h.log.mu.Lock()
		h.log.tools = append(h.log.tools, req.Tool)
		h.log.mu.Unlock()
	}
	return approvalAnswer{Choice: "deny", Why: "headless"}
}

// unattended: asking a headless approver is refusing (sandbox_netask.go).
func (headlessApprover) unattended() bool { return true }

// refusedHost keeps a host the network gate refused because nobody could
// be asked (sandbox_netask.go), so -p ends "not done" naming it.
func (h headlessApprover) refusedHost(host string) {
	if h.log == nil {
		return
	}
	h.log.mu.Lock()
	defer h.log.mu.Unlock()
	if !contains(h.log.hosts, host) {
		h.log.hosts = append(h.log.hosts, host)
	}
}

// logsHosts: with a log, the run's closing word names the refused hosts
// (so the gate need not say each on stderr as it goes).
func (h headlessApprover) logsHosts() bool { return h.log != nil }

// refusalLog is the tools a headlessApprover refused, in order, and the
// hosts the network gate refused unasked.
type refusalLog struct {
	mu    mutex
	tools []string
	hosts []string
}

// approvalTimeout is how long a request waits for its answer.
func approvalTimeout() time.Duration {
	return time.Duration(theDefaults().Approval.TimeoutS) * time.Second
}

// patientApprover is a front end whose requests wait a time of their own
// instead of approval.timeout_s (the link's scheduled runs: the schedule's
// wait).
type patientApprover interface{ waitLimit() time.Duration }

// approvalLimit is how long a's requests wait.
func approvalLimit(a approver) time.Duration {
	if p, ok := a.(patientApprover); ok {
		if d := p.waitLimit(); d > 0 {
			return d
		}
	}
	return approvalTimeout()
}

// approveWithin asks a, and counts no answer within limit as a denial
// (Why "timeout"). An answer that was not on offer is a denial too, and a
// corrected command goes only with once, so no front end can widen what
// was asked.
func approveWithin(ctx context.Context, a approver, req approvalRequest, limit time.Duration) approvalAnswer {
	if a == nil {
		a = headlessApprover{} // no front end attached: nobody can answer
	}
	tctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	ch := make(chan approvalAnswer, 1)
	go func() { ch <- a.approve(tctx, req) }()
	var ans approvalAnswer
	select {
	case ans = <-ch:
	case <-tctx.Done():
		if ctx.Err() != nil {
			return approvalAnswer{Choice: "deny", Why: "cancelled"}
		}
		return approvalAnswer{Choice: "deny", Why: "timeout"}
	}
	if !contains(req.Options, ans.Choice) {
		return approvalAnswer{Choice: "deny", Why: ans.Why, Feedback: ans.Feedback}
	}
	if ans.Choice != "once" {
		ans.Command = ""
	}
	return ans
}

// request builds the question for a call the rules ask about.
func (p *permissions) request(callID string, t *toolSpec, args json.RawMessage, d decision) approvalRequest {
	req := approvalRequest{CallID: callID, Tool: t.Name, Risk: t.Risk, Reason: d.Reason, Rule: d.Rule, Input: string(args)}
	if req.Reason == "" || req.Reason == d.Rule {
		// The mode's table decided: a sentence saying so, then the rule.
		req.Reason = permText("reason_mode", "mode", p.mode(), "what", permText("risk_"+t.Risk))
	}
	if d.Rule != "" && !strings.Contains(req.Reason, d.Rule) {
		req.Reason += " " + permText("reason_rule", "rule", d.Rule)
	}
	req.Options = []string{"once", "deny"}
	if d.Remember && t.Confirm != "always" {
		req.Options = []string{"once", "session", "project", "deny"}
		what := alwaysWhat(t, d)
		req.Scopes = map[string]string{"session": permText("scope_session", "what", what), "project": permText("scope_project", "what", what)}
	}
	for _, abs := range p.callPaths(t, args) {
		req.Paths = append(req.Paths, relPath(p.root, abs))
	}
	if t.Name == theArityShellTool() {
		var a struct {
			Command string `json:"command"`
		}
		json.Unmarshal(args, &a)
		req.Input = a.Command
	} else if diff, ok := p.editDiff(t, args); ok {
		req.Diff = diff
	}
	return req
}

// alwaysWhat says what an always answer to d would allow, as remember
// keeps it: bash's command patterns (`git log …`), webfetch's host, or the
// tool itself, for a file tool within the project (outside paths and
// protected files are asked every time, whatever was allowed).
func alwaysWhat(t *toolSpec, d decision) string {
	if len(d.Patterns) > 0 {
		var shown []string
		for _, pat := range d.Patterns {
			if t.Name == theArityShellTool() && strings.HasSuffix(pat, " *") {
				pat = strings.TrimSuffix(pat, " *") + " …" // git log * reads as any git log …
			}
			shown = append(shown, "`"+pat+"`")
		}
		key := "scope_hosts"
		if t.Name == theArityShellTool() {
			key = "scope_commands"
		}
		return permText(key, "commands", strings.Join(shown, permText("scope_commands_or")), "hosts", strings.Join(shown, permText("scope_commands_or")))
	}
	switch t.Risk {
	case "write":
		return permText("scope_write", "tool", t.Name)
	case "read":
		return permText("scope_read", "tool", t.Name)
	}
	return permText("scope_tool", "tool", t.Name)
}

// editDiff shows what a writing tool would change as a unified diff, where
// that is cheap: the file is read and the change applied in memory. An edit
// that would fail shows its old and new text instead; apply_patch shows its
// own patch.
func (p *permissions) editDiff(t *toolSpec, args json.RawMessage) (string, bool) {
	var a struct {
		Path    string   `json:"path"`
		Content string   `json:"content"`
		Input   string   `json:"input"`
		Edits   []editOp `json:"edits"`
		editOp
	}
	if json.Unmarshal(args, &a) != nil {
		return "", false
	}
	switch t.Name {
	case "apply_patch":
		return a.Input, true
	case "write", "edit", "multiedit":
	default:
		return "", false
	}
	abs, _ := resolvePath(p.root, a.Path)
	shown := relPath(p.root, abs)
	old, err := os.ReadFile(abs)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", false
	}
	content := string(old)
	isNew := errors.Is(err, fs.ErrNotExist)
	switch t.Name {
	case "write":
		content = a.Content
	case "edit":
		a.Edits = []editOp{a.editOp}
		fallthrough
	case "multiedit":
		for _, e := range a.Edits {
			n := strings.Count(content, e.Old)
			if e.Old == "" || n == 0 || (n > 1 && !e.ReplaceAll) {
				// No diff: one made of the old text alone would show a
				// change to a file that does not look like that.
				why := permText("edit_not_found", "path", shown)
				switch {
				case isNew:
					why = permText("edit_no_file", "path", shown)
				case e.Old == "":
					why = permText("edit_empty_old")
				case n > 1:
					why = permText("edit_many", "path", shown, "n", n)
				}
				var b strings.Builder
				b.WriteString(why + "\n" + permText("edit_looked_for") + "\n")
				for _, l := range splitLines(e.Old) {
					b.WriteString("  " + strings.TrimRight(l, "\n") + "\n")
				}
				return b.String(), true
			}
			if e.ReplaceAll {
				content = strings.ReplaceAll(content, e.Old, e.New)
			} else {
				content = strings.Replace(content, e.Old, e.New, 1)
			}
		}
	}
	if isNew {
		return unifiedDiff("", string(old), content, shown), true
	}
	return unifiedDiff(shown, string(old), content), true
}

// diffOp is one line of an edit script: ' ' kept, '-' removed, '+' added.
type diffOp struct {
	kind byte
	line string
}

// unifiedDiff is a small unified diff of two texts, with defaults.json's
// context lines; texts too large to compare cheaply are summarised.
func unifiedDiff(name, a, b string, newName ...string) string {
	ap := theDefaults().Approval
	al, bl := splitLines(a), splitLines(b)
	head := "--- " + diffSide("a/", name) + "\n+++ " + diffSide("b/", name) + "\n"
	if len(newName) > 0 { // a new file: nothing on the old side
		head = "--- /dev/null\n+++ " + diffSide("b/", newName[0]) + "\n"
	}
	if len(al)+len(bl) > ap.DiffMaxLines {
		return head + fmt.Sprintf("@@ %d lines -> %d lines (too large to show) @@\n", len(al), len(bl))
	}
	ops := diffLines(al, bl)
	return head + formatHunks(ops, ap.ContextLines)
}

// diffSide names a file in a diff header: a/ or b/ before a project path,
// an absolute path (outside the project) as it is.
func diffSide(side, name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return side + name
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	l := strings.SplitAfter(s, "\n")
	if l[len(l)-1] == "" {
		l = l[:len(l)-1]
	}
	return l
}

// diffLines makes an edit script: the common head and tail are kept, and
// the middle compared by longest common subsequence when that is small,
// else shown removed and added whole.
func diffLines(a, b []string) []diffOp {
	var ops []diffOp
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		ops = append(ops, diffOp{' ', a[i]})
		i++
	}
	ea, eb := len(a), len(b)
	for ea > i && eb > i && a[ea-1] == b[eb-1] {
		ea--
		eb--
	}
	ma, mb := a[i:ea], b[i:eb]
	if len(ma)*len(mb) > 1<<20 {
		for _, l := range ma {
			ops = append(ops, diffOp{'-', l})
		}
		for _, l := range mb {
			ops = append(ops, diffOp{'+', l})
		}
	} else {
		// lcs[x][y] is the common length of ma[x:] and mb[y:].
		lcs := make([][]int32, len(ma)+1)
		for x := range lcs {
			lcs[x] = make([]int32, len(mb)+1)
		}
		for x := len(ma) - 1; x >= 0; x-- {
			for y := len(mb) - 1; y >= 0; y-- {
				if ma[x] == mb[y] {
					lcs[x][y] = lcs[x+1][y+1] + 1
				} else {
					lcs[x][y] = max(lcs[x+1][y], lcs[x][y+1])
				}
			}
		}
		x, y := 0, 0
		for x < len(ma) || y < len(mb) {
			switch {
			case x < len(ma) && y < len(mb) && ma[x] == mb[y]:
				ops = append(ops, diffOp{' ', ma[x]})
				x++
				y++
			case x < len(ma) && (y == len(mb) || lcs[x+1][y] >= lcs[x][y+1]):
				ops = append(ops, diffOp{'-', ma[x]})
				x++
			default:
				ops = append(ops, diffOp{'+', mb[y]})
				y++
			}
		}
	}
	for k := ea; k < len(a); k++ {
		ops = append(ops, diffOp{' ', a[k]})
	}
	return ops
}

// formatHunks prints an edit script as unified-diff hunks with n lines of
// context around each change.
func formatHunks(ops []diffOp, n int) string {
	var b strings.Builder
	for start := 0; start < len(ops); {
		c := start
		for c < len(ops) && ops[c].kind == ' ' {
			c++
		}
		if c == len(ops) {
			break
		}
		lo := max(c-n, start)
		hi := c
		for last := c; hi < len(ops); hi++ {
			if ops[hi].kind != ' ' {
				last = hi
			} else if hi-last > 2*n {
				break
			}
		}
		// Trim trailing context to n lines.
		end := hi
		for end > lo && ops[end-1].kind == ' ' {
			end--
		}
		end = min(end+n, len(ops))
		aStart, bStart := 1, 1
		for _, o := range ops[:lo] {
			if o.kind != '+' {
				aStart++
			}
			if o.kind != '-' {
				bStart++
			}
		}
		aLen, bLen := 0, 0
		for _, o := range ops[lo:end] {
			if o.kind != '+' {
				aLen++
			}
			if o.kind != '-' {
				bLen++
			}
		}
		fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@\n", aStart, aLen, bStart, bLen)
		for _, o := range ops[lo:end] {
			b.WriteByte(o.kind)
			b.WriteString(o.line)
			if !strings.HasSuffix(o.line, "\n") {
				b.WriteString("\n\\ No newline at end of file\n")
			}
		}
		start = end
	}
	return b.String()
}
