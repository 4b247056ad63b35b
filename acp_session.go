package main

// One ACP session: its engine, its queue of prompts, the content blocks of
// a prompt turned into text and attachments, and the approver and file
// system the engine uses through the editor.

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

type acpSession struct {
	a       *acpAgent
	id      string
	root    string
	e       *engine
	cleanup func()

	mu          mutex
	queue       []*acpTurn // the running prompt first, then those waiting
	active      bool       // a turn runs whose updates may still be sent
	pendingMode string
	tools       map[string]*acpTool // this turn's calls the client was told of
}

// acpTurn is one session/prompt, from its arrival to its answer.
type acpTurn struct {
	call   *rpcCall
	ctx    context.Context
	cancel context.CancelFunc
	ready  chan struct{} // closed when it is this turn's turn
	blocks []acpBlock
}

func (a *acpAgent) newSession(e *engine, cleanup func()) *acpSession {
	s := &acpSession{a: a, id: e.sess.ID, root: e.sess.Project, e: e, cleanup: cleanup, tools: map[string]*acpTool{}}
	e.emit = s.onEvent
	e.ask = s
	a.mu.Lock()
	fsRead, fsWrite := a.fsRead, a.fsWrite
	a.mu.Unlock()
	if fsRead || fsWrite {
		e.tb.fsys = &acpFS{s: s, read: fsRead, write: fsWrite}
	}
	return s
}

// update sends one session/update.
//
//go:noinline
func (s *acpSession) update(u map[string]any) {
	s.a.conn.notify("session/update", map[string]any{"sessionId": s.id, "update": u})
}

// applyMode puts a mode change into effect. It is called only where no
// turn is reading the mode: between turns, and on the engine's own
// goroutine at an approval.
func (s *acpSession) applyMode() bool {
	s.mu.Lock()
	m := s.pendingMode
	s.pendingMode = ""
	s.mu.Unlock()
	if m == "" || m == s.e.perm.mode() {
		return false
	}
	s.e.perm.setMode(m)
	s.e.sess.Mode = m
	return true
}

// cancelAll stops the running turn and every waiting one.
func (s *acpSession) cancelAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.queue {
		t.cancel()
	}
}

// acpBlock is one content block of a prompt.
type acpBlock struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	Data     string `json:"data"`
	MimeType string `json:"mimeType"`
	URI      string `json:"uri"`
	Name     string `json:"name"`
	Resource *struct {
		URI      string  `json:"uri"`
		MimeType string  `json:"mimeType"`
		Text     *string `json:"text"`
		Blob     *string `json:"blob"`
	} `json:"resource"`
	bytes []byte // decoded image or blob
}

type acpPromptParams struct {
	SessionID string     `json:"sessionId"`
	Prompt    []acpBlock `json:"prompt"`
}

// checkBlocks decodes what is base64 and holds each block and the whole
// prompt to acp.json's limits.
func checkBlocks(blocks []acpBlock) *rpcError {
	sp := theACPSpec().Prompt
	if len(blocks) == 0 {
		return paramErr("empty_prompt")
	}
	total := 0
	for i := range blocks {
		b := &blocks[i]
		n := i + 1
		size := 0
		var b64 *string
		switch b.Type {
		case "text":
			size = len(b.Text)
		case "resource_link":
			if b.URI == "" {
				return paramErr("missing", "n", n, "type", b.Type, "field", "uri")
			}
		case "image":
			if b.Data == "" {
				return paramErr("missing", "n", n, "type", b.Type, "field", "data")
			}
			b64 = &b.Data
		case "resource":
			switch {
			case b.Resource == nil:
				return paramErr("missing", "n", n, "type", b.Type, "field", "resource")
			case b.Resource.Text != nil:
				size = len(*b.Resource.Text)
			case b.Resource.Blob != nil:
				b64 = b.Resource.Blob
			default:
				return paramErr("missing", "n", n, "type", b.Type, "field", "resource.text or resource.blob")
			}
		default:
			return paramErr("block_type", "n", n, "type", b.Type)
		}
		if b64 != nil {
			size = base64.StdEncoding.DecodedLen(len(*b64))
		}
		if size > sp.MaxBlockBytes {
			return paramErr("block_too_big", "n", n, "size", size, "max", sp.MaxBlockBytes)
		}
		total += size
		if total > sp.MaxPromptBytes {
			return paramErr("prompt_too_big", "size", total, "max", sp.MaxPromptBytes)
		}
		if b64 != nil {
			data, err := base64.StdEncoding.DecodeString(strings.TrimSpace(*b64))
			if err != nil {
				return paramErr("bad_base64", "n", n, "error", err)
			}
			b.bytes = data
		}
	}
	return nil
}

// prompt takes a session/prompt in: checked and put in its session's queue
// here, on the read loop, so prompts run in the order they came; run in
// its own goroutine.
func (a *acpAgent) prompt(c *rpcCall) {
	var p acpPromptParams
	if err := decodeParams(c.Method, c.Params, &p); err != nil {
		c.reply(nil, err)
		return
	}
	s := a.session(p.SessionID)
	if s == nil {
		c.reply(nil, paramErr("no_session", "id", p.SessionID))
		return
	}
	if err := checkBlocks(p.Prompt); err != nil {
		c.reply(nil, err)
		return
	}
	t := &acpTurn{call: c, ready: make(chan struct{}), blocks: p.Prompt}
	t.ctx, t.cancel = context.WithCancel(a.ctx)
	s.mu.Lock()
	s.queue = append(s.queue, t)
	if len(s.queue) == 1 {
		close(t.ready)
	}
	s.mu.Unlock()
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		defer c.recovered()
		s.runTurn(t)
	}()
}

// finish takes t out of the queue and lets the next one run.
func (s *acpSession) finish(t *acpTurn) {
	t.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, q := range s.queue {
		if q == t {
			s.queue = append(s.queue[:i], s.queue[i+1:]...)
			if i == 0 && len(s.queue) > 0 {
				close(s.queue[0].ready)
			}
			return
		}
	}
}

var acpStopReasons = map[string]bool{"end_turn": true, "max_turn_requests": true, "max_tokens": true, "refusal": true, "cancelled": true}

// runTurn waits for t's turn, runs it, and answers: a stop reason, or for
// a turn that failed (the model unreachable, the disk full) -32603 with
// the reason. Nothing of the turn is sent after its answer.
func (s *acpSession) runTurn(t *acpTurn) {
	defer s.finish(t)
	cancelled := map[string]string{"stopReason": "cancelled"}
	select {
	case <-t.ready:
	case <-t.ctx.Done():
		t.call.reply(cancelled, nil)
		return
	}
	if t.ctx.Err() != nil {
		t.call.reply(cancelled, nil)
		return
	}
	s.applyMode()
	s.readingPrompt(t.blocks) // link_cards.go
	text, images, err := s.promptText(t.blocks)
	if err != nil {
		t.call.reply(nil, err)
		return
	}
	exp, err := expandPrompt(s.root, text, s.e.tb.vision)
	if err != nil {
		t.call.reply(nil, &rpcError{Code: rpcInvalidParams, Message: err.Error()})
		return
	}
	// A shared command may switch the mode or be an action that sends
	// nothing to the model; the editor hears the outcome as a message.
	if exp.Mode != "" && exp.Mode != s.e.perm.mode() {
		s.mu.Lock()
		s.pendingMode = exp.Mode
		s.mu.Unlock()
		s.applyMode()
		s.update(map[string]any{"sessionUpdate": "current_mode_update", "currentModeId": exp.Mode})
	}
	if exp.Action != "" {
		if msg := s.action(exp.Action); msg != "" {
			s.update(map[string]any{"sessionUpdate": "agent_message_chunk", "content": textBlock(msg)})
		}
		t.call.reply(map[string]string{"stopReason": "end_turn"}, nil)
		return
	}
	for _, p := range exp.Read {
		s.e.tb.stamp(p)
	}
	s.mu.Lock()
	s.active = true
	s.tools = map[string]*acpTool{}
	s.mu.Unlock()
	out := s.e.runTurn(t.ctx, exp.Text, append(exp.Images, images...)...)
	s.mu.Lock()
	s.active = false
	s.mu.Unlock()
	switch {
	case t.ctx.Err() != nil || out.StopReason == "cancelled":
		t.call.reply(cancelled, nil)
	case acpStopReasons[out.StopReason]:
		t.call.reply(stopAnswer(out.StopReason, out.Unsent), nil)
	case out.Err != nil:
		t.call.reply(nil, &rpcError{Code: rpcInternalError, Message: out.Err.Error()})
	default:
		t.call.reply(stopAnswer("end_turn", out.Unsent), nil)
	}
}

// action runs a shared command that sends nothing to the model (/undo,
// /compact, /plan without a task) and says what it did.
func (s *acpSession) action(name string) string {
	switch name {
	case "undo":
		rep, err := s.e.undoLast()
		if err != nil {
			return err.Error()
		}
		if rep == nil {
			return replText("undo_nothing")
		}
		return rep.text(replText)
	case "compact":
		if err := s.e.compact(context.Background()); err != nil {
			return err.Error()
		}
		return replText("compacted")
	}
	return "" // plan: the mode switch was the whole of it
}

// promptText turns content blocks into the prompt's text and images. A
// file link inside the project becomes an @path mention (expanded as the
// REPL does); embedded text goes in whole; images and blobs are saved in
// the session's attachment folder, named in the text, and images go to a
// vision model as images.
func (s *acpSession) promptText(blocks []acpBlock) (string, []imagePart, error) {
	texts := theACPSpec().Texts
	var b strings.Builder
	var images []imagePart
	dir := filepath.Join(stateDir(), "attachments", s.id)
	turnN := len(s.e.sess.Turns) + 1
	for i, blk := range blocks {
		switch blk.Type {
		case "text":
			if i > 0 && blocks[i-1].Type == "text" {
				b.WriteString("\n\n") // text blocks are joined by a blank line (acp.md)
			}
			b.WriteString(blk.Text)
		case "resource_link":
			if p, ok := fileURIPath(blk.URI); ok && within(s.root, p) {
				b.WriteString(fillPairs(texts["resource_link"], "path", relPath(s.root, p)))
			} else {
				b.WriteString(fillPairs(texts["resource_link_outside"], "name", blk.Name, "uri", blk.URI))
			}
		case "resource":
			r := blk.Resource
			if r.Text != nil {
				b.WriteString(fillPairs(texts["resource"], "uri", r.URI, "text", *r.Text))
				continue
			}
			name := attachmentName(r.URI, r.MimeType, i)
			path, err := saveAttachment(dir, turnN, name, blk.bytes)
			if err != nil {
				return "", nil, err
			}
			b.WriteString(fillPairs(texts["attachment"], "name", name, "mime", r.MimeType, "size", len(blk.bytes), "path", path))
		case "image":
			name := attachmentName(blk.URI, blk.MimeType, i)
			path, err := saveAttachment(dir, turnN, name, blk.bytes)
			if err != nil {
				return "", nil, err
			}
			key := "attachment"
			if img, ok := modelImage(blk, s.e.tb.vision); ok {
				images = append(images, img)
			} else if isImageMime(blk.MimeType) {
				key = "image_no_vision"
			}
			b.WriteString(fillPairs(texts[key], "name", name, "mime", blk.MimeType, "size", len(blk.bytes), "path", path))
		}
	}
	return b.String(), images, nil
}

// modelImage is an image block as the model gets it: only for a vision
// model, only of an image type the model servers take (a block that says
// text/html or nothing would become a data URL the server rejects, failing
// the turn, and its mime type goes into that URL unchecked), and encoded
// afresh from the decoded bytes, so whitespace or line breaks in the
// client's base64 never reach the server.
func modelImage(blk acpBlock, vision bool) (imagePart, bool) {
	if !vision || !isImageMime(blk.MimeType) {
		return imagePart{}, false
	}
	return imagePart{Mime: blk.MimeType, Data: base64.StdEncoding.EncodeToString(blk.bytes)}, true
}

// isImageMime says whether mime is one of the image types lembas attaches.
func isImageMime(mime string) bool {
	for _, m := range imageMimes {
		if m == mime {
			return true
		}
	}
	return false
}

// fileURIPath is the local path of a file:// URI.
func fileURIPath(uri string) (string, bool) {
	u, err := url.Parse(uri)
	if err != nil || u.Scheme != "file" {
		return "", false
	}
	p := filepath.FromSlash(u.Path)
	if len(p) > 2 && p[0] == '\\' && p[2] == ':' { // file:///C:/x on Windows
		p = p[1:]
	}
	return p, filepath.IsAbs(p)
}

// attachmentName is a safe file name for a block: the URI's last part, or
// one made from its place and type.
func attachmentName(uri, mime string, i int) string {
	name := ""
	if u, err := url.Parse(uri); err == nil && u.Path != "" {
		name = filepath.Base(filepath.FromSlash(u.Path))
	}
	clean := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r < ' ' {
			return '_'
		}
		return r
	}, name)
	if clean == "" || clean == "." || clean == ".." {
		ext := ""
		for e, m := range imageMimes {
			if m == mime && (ext == "" || e < ext) {
				ext = e
			}
		}
		if ext == "" {
			ext = ".bin"
		}
		clean = fmt.Sprintf("block-%d%s", i+1, ext)
	}
	return clean
}

// saveAttachment writes one attachment under the session's folder as
// <turn>-<name>, never overwriting another.
func saveAttachment(dir string, turnN int, name string, data []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", errorf("saving an attachment: %v", err)
	}
	p := filepath.Join(dir, fmt.Sprintf("%d-%s", turnN, name))
	for n := 2; ; n++ {
		if _, err := os.Lstat(p); os.IsNotExist(err) {
			break
		}
		p = filepath.Join(dir, fmt.Sprintf("%d-%d-%s", turnN, n, name))
	}
	if err := writeFileAtomic(p, data, 0o600); err != nil {
		return "", errorf("saving an attachment: %v", err)
	}
	return p, nil
}

// acpPermissionAnswer is the client's answer to session/request_permission.
type acpPermissionAnswer struct {
	Outcome struct {
		Outcome  string `json:"outcome"`
		OptionID string `json:"optionId"`
	} `json:"outcome"`
	Meta struct {
		Lembas struct {
			Command  string `json:"command"`
			Feedback string `json:"feedback"`
		} `json:"lembas"`
	} `json:"_meta"`
}

// approve puts one call to the editor as session/request_permission. A
// mode change made since the turn began is applied first, and a call the
// new mode allows runs without asking. No answer within the approval
// timeout, an answer of cancelled, or the turn's cancel is a denial.
func (s *acpSession) approve(ctx context.Context, req approvalRequest) approvalAnswer {
	allowed, _, tc := s.beginApproval(req)
	if allowed {
		return approvalAnswer{Choice: "once"}
	}
	// ctx carries the approval timeout (approveWithin, the one place it is
	// kept): when it runs out the request is abandoned and counts as denied.
	var ans acpPermissionAnswer
	err := s.a.conn.call(ctx, "session/request_permission", permissionParams(s.id, req, tc), &ans)
	timedOut := err != nil && ctx.Err() == context.DeadlineExceeded
	if err != nil && !timedOut {
		s.a.log(fmt.Sprintf("session/request_permission: %v; taken as a denial", err))
	}
	return permissionAnswer(req, ans, err, timedOut)
}

// approvalArgs gives back a call's arguments from an approval request,
// which carries a shell call as its command line.
// beginApproval applies a mode change made since the turn began — a call
// the new mode allows needs no card (allowed) — and otherwise announces the
// call, giving its id and the tool call announced, for ACP's card and a
// scheduled run's alike.
func (s *acpSession) beginApproval(req approvalRequest) (allowed bool, id string, tc map[string]any) {
	changed := s.applyMode()
	t := s.e.tb.lookup(req.Tool)
	args := approvalArgs(req)
	if changed && t != nil && s.e.perm.decide(t, args).Verdict == "allow" {
		return true, "", nil
	}
	id = req.CallID
	if id == "" {
		id = fmt.Sprintf("ask_%d", time.Now().UnixNano())
	}
	return false, id, s.announce(id, req.Tool, args)
}

func approvalArgs(req approvalRequest) json.RawMessage {
	if req.Tool == "bash" {
		b, _ := json.Marshal(map[string]string{"command": req.Input})
		return b
	}
	if json.Valid([]byte(req.Input)) {
		return json.RawMessage(req.Input)
	}
	b, _ := json.Marshal(map[string]string{"input": req.Input})
	return b
}

// permissionParams is the one place an approval request becomes ACP's:
// once → allow_once, session → allow_always, deny → reject_once; project
// → allow_always where no session is offered (an MCP server's approval,
// the network's card), so a request that can only be kept for the project
// still has its "always" over ACP.
func permissionParams(sessionID string, req approvalRequest, tc map[string]any) map[string]any {
	names := theACPSpec().Options
	kinds := map[string]string{"once": "allow_once", "session": "allow_always", "deny": "reject_once"}
	if !contains(req.Options, "session") {
		kinds["project"] = "allow_always"
	}
	var opts []map[string]string
	always := false
	for _, o := range req.Options {
		if k, ok := kinds[o]; ok {
			opts = append(opts, map[string]string{"optionId": o, "name": names[o], "kind": k})
			always = always || k == "allow_always"
		}
	}
	call := map[string]any{}
	for _, k := range []string{"toolCallId", "title", "kind", "rawInput", "locations", "content"} {
		if v, ok := tc[k]; ok {
			call[k] = v
		}
	}
	call["status"] = "pending"
	meta := map[string]any{"reason": req.Reason}
	if always {
		meta["always"] = req.Tool
		if sc := req.Scopes["session"]; sc != "" {
			meta["always_scope"] = sc // what "Allow for this session" would allow, in words
		}
	}
	if req.Purpose != "" {
		meta["purpose"] = req.Purpose // what the model said the call is for (purpose.json)
	}
	if req.Agent != "" {
		meta["subagent"] = req.Agent // a subagent asks (subagents.go): "<job id> <agent>"
		if id, _, ok := strings.Cut(req.Agent, " "); ok && strings.HasPrefix(id, "j") {
			meta["job"] = id // capability jobs: the job whose subagent asks (a team member's is its s-id, capability tree)
		}
	}
	return map[string]any{"sessionId": sessionID, "toolCall": call, "options": opts, "_meta": map[string]any{"lembas": meta}}
}

// permissionAnswer is the one place ACP's answer becomes the engine's: a
// selected option the request offered, with a corrected command (once
// only) or feedback (a denial); anything else is a denial.
func permissionAnswer(req approvalRequest, ans acpPermissionAnswer, err error, timedOut bool) approvalAnswer {
	if timedOut {
		return approvalAnswer{Choice: "deny", Why: "timeout"}
	}
	if err != nil || ans.Outcome.Outcome != "selected" {
		return approvalAnswer{Choice: "deny"}
	}
	offered := false
	for _, o := range req.Options {
		offered = offered || o == ans.Outcome.OptionID
	}
	meta := ans.Meta.Lembas
	switch {
	case !offered || ans.Outcome.OptionID == "deny":
		return approvalAnswer{Choice: "deny", Feedback: strings.TrimSpace(meta.Feedback)}
	case ans.Outcome.OptionID == "once" && strings.TrimSpace(meta.Command) != "":
		return approvalAnswer{Choice: "once", Command: strings.TrimSpace(meta.Command)}
	}
	return approvalAnswer{Choice: ans.Outcome.OptionID}
}

// acpFS reads and writes text files through the editor when it offers to
// (so unsaved buffers are what the model sees and changes), and through
// the disk when it does not or when it fails.
type acpFS struct {
	s           *acpSession
	read, write bool
}

type acpReadAnswer struct {
	Content string `json:"content"`
}

func (f *acpFS) readFile(abs string) ([]byte, error) {
	if !f.read {
		return os.ReadFile(abs)
	}
	ctx, cancel := context.WithTimeout(f.s.a.ctx, time.Duration(f.s.a.sp.ClientFSTimeoutS)*time.Second)
	defer cancel()
	var r acpReadAnswer
	if err := f.s.a.conn.call(ctx, "fs/read_text_file", map[string]string{"sessionId": f.s.id, "path": abs}, &r); err != nil {
		if _, serr := os.Stat(abs); serr == nil {
			f.s.a.log(fmt.Sprintf("fs/read_text_file %s: %v; read from the disk instead", abs, err))
		}
		return os.ReadFile(abs)
	}
	return []byte(r.Content), nil
}

func (f *acpFS) writeFile(abs string, data []byte, perm os.FileMode) error {
	if !f.write {
		return writeFileAtomic(abs, data, perm)
	}
	ctx, cancel := context.WithTimeout(f.s.a.ctx, time.Duration(f.s.a.sp.ClientFSTimeoutS)*time.Second)
	defer cancel()
	err := f.s.a.conn.call(ctx, "fs/write_text_file", map[string]string{"sessionId": f.s.id, "path": abs, "content": string(data)}, nil)
	if err != nil {
		f.s.a.log(fmt.Sprintf("fs/write_text_file %s: %v; written to the disk instead", abs, err))
		return writeFileAtomic(abs, data, perm)
	}
	return nil
}
