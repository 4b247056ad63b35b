package main

// Attachments on the prompt event (acp.md capability attachments): the
// image and blob blocks of a link prompt listed as { name, mimeType, size }
// beside the text the person typed, so the web UI draws the files as
// files rather than reading the lines the model is given about them.

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// promptShown is what the prompt event of a turn shows.
type promptShown struct {
	text        string
	attachments []map[string]any
}

var shownPrompts = struct {
	mu mutex
	m  map[string]promptShown // "<session>\x00<turn>" → shown
}{m: map[string]promptShown{}}

// notePromptShown keeps, for a prompt with attachments, what its prompt
// event shows; the names are the ones the attachment files get
// (attachmentName, as promptText names them).
func notePromptShown(sessionID, turnID string, params json.RawMessage) {
	var p acpPromptParams
	if json.Unmarshal(params, &p) != nil {
		return
	}
	var texts []string
	var list []map[string]any
	for i, b := range p.Prompt {
		switch {
		case b.Type == "text":
			texts = append(texts, b.Text)
		case b.Type == "image":
			list = append(list, attachmentEntry(attachmentName(b.URI, b.MimeType, i), b.MimeType, b.Data))
		case b.Type == "resource" && b.Resource != nil && b.Resource.Blob != nil:
			list = append(list, attachmentEntry(attachmentName(b.Resource.URI, b.Resource.MimeType, i), b.Resource.MimeType, *b.Resource.Blob))
		}
	}
	if len(list) == 0 {
		return
	}
	shownPrompts.mu.Lock()
	shownPrompts.m[sessionID+"\x00"+turnID] = promptShown{text: strings.Join(texts, "\n\n"), attachments: list}
	shownPrompts.mu.Unlock()
}

func attachmentEntry(name, mime, b64 string) map[string]any {
	data, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(b64)) // checkBlocks refuses what does not decode
	return map[string]any{"name": name, "mimeType": mime, "size": len(data)}
}

// forgetPromptShown drops what a turn that never showed its prompt kept.
func forgetPromptShown(sessionID, turnID string) {
	shownPrompts.mu.Lock()
	delete(shownPrompts.m, sessionID+"\x00"+turnID)
	shownPrompts.mu.Unlock()
}

// showPrompt puts a turn's attachments and typed text on its prompt
// event, once.
func showPrompt(sessionID, turnID string, m map[string]any) {
	k := sessionID + "\x00" + turnID
	shownPrompts.mu.Lock()
	s, ok := shownPrompts.m[k]
	delete(shownPrompts.m, k)
	shownPrompts.mu.Unlock()
	if ok {
		m["text"], m["attachments"] = s.text, s.attachments
	}
}

// attachmentLines are acp.json's attachment texts as patterns: what the
// model is given about a saved attachment, read back for history.
var attachmentLines = sync.OnceValue(func() []*regexp.Regexp {
	var out []*regexp.Regexp
	for _, key := range []string{"image_no_vision", "attachment"} { // the more particular first
		tmpl := strings.TrimSpace(theACPSpec().Texts[key])
		if tmpl == "" {
			continue
		}
		re := regexp.QuoteMeta(tmpl)
		for _, v := range []struct{ name, pat string }{{"name", `(?P<name>[^\n]+?)`}, {"mime", `(?P<mime>[^\n,()]*?)`},
			{"size", `(?P<size>[0-9]+)`}, {"path", `[^\n]+?`}} {
			re = strings.ReplaceAll(re, regexp.QuoteMeta("{{"+v.name+"}}"), v.pat)
		}
		if r, err := regexp.Compile(`\n?` + re + `\n?`); err == nil {
			out = append(out, r)
		}
	}
	return out
})

// historyAttachments splits a stored prompt into the text the person
// typed and its attachments, for _lembas/session/history.
func historyAttachments(text string) (string, []map[string]any) {
	var list []map[string]any
	for _, re := range attachmentLines() {
		text = re.ReplaceAllStringFunc(text, func(s string) string {
			g := re.FindStringSubmatch(s)
			size, _ := strconv.Atoi(g[re.SubexpIndex("size")])
			list = append(list, map[string]any{"name": g[re.SubexpIndex("name")], "mimeType": g[re.SubexpIndex("mime")], "size": size})
			return ""
		})
	}
	return text, list
}
