package main

// session_search: earlier sessions of this project found by words in what
// was said — each session one document of its prompts and answers, ranked
// by BM25 like the library's pieces — and a found session's messages read
// a page at a time. Sessions are read only through the store's own list
// and read, never by opening its files.

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
)

func init() {
	sessionTools["session_search"] = toolSessionSearch
}

// sessionText is what session_search searches of a session: its title,
// the person's prompts (without the session notes put before them) and
// the model's answers.
func sessionText(s *session) string {
	var b strings.Builder
	b.WriteString(s.Title)
	for _, m := range s.Messages {
		if m.Undone || m.Content == "" {
			continue
		}
		switch {
		case m.Role == "user" && (m.Kind == "prompt" || m.Kind == "steer" || m.Kind == ""):
			b.WriteString("\n" + stripSessionNote(m.Content))
		case m.Role == "assistant":
			b.WriteString("\n" + m.Content)
		}
	}
	return b.String()
}

// stripSessionNote takes the <session-note> off the front of a prompt.
func stripSessionNote(s string) string {
	wrap := theSpec().Loop.Context.Note["wrap"]
	open, _, _ := strings.Cut(wrap, "{{text}}")
	open = strings.TrimSpace(open)
	if !strings.HasPrefix(s, open) {
		return s
	}
	_, after, _ := strings.Cut(wrap, "{{text}}")
	closeTag := strings.TrimSpace(after)
	if i := strings.Index(s, closeTag); i >= 0 {
		return strings.TrimSpace(s[i+len(closeTag):])
	}
	return s
}

// sessionHit is one session found.
type sessionHit struct {
	sess  *session
	text  string
	score float64
}

// searchSessions ranks a project's sessions (but not the one asking) by
// BM25 over their text. list may give sessions without their messages (a
// store that starts lazily); those are read whole.
func searchSessions(st *store, project, exclude, query string) ([]sessionHit, error) {
	all, err := st.list()
	if err != nil {
		return nil, err
	}
	ls := theLibrarySpec().Library
	type doc struct {
		s    *session
		text string
		tf   map[string]int
		n    int
	}
	var docs []doc
	total := 0
	for _, s := range all {
		if s.Project != project || s.ID == exclude {
			continue
		}
		if len(s.Messages) == 0 {
			if full, err := st.read(s.ID); err == nil {
				s = full
			}
		}
		text := sessionText(s)
		d := doc{s: s, text: text, tf: map[string]int{}}
		for _, w := range terms(text) {
			d.tf[w]++
			d.n++
		}
		total += d.n
		docs = append(docs, d)
	}
	if len(docs) == 0 {
		return nil, nil
	}
	avg := float64(total) / float64(len(docs))
	df := map[string]int{}
	q := uniq(terms(query))
	for _, w := range q {
		for _, d := range docs {
			if d.tf[w] > 0 {
				df[w]++
			}
		}
	}
	var hits []sessionHit
	N := float64(len(docs))
	for _, d := range docs {
		score := 0.0
		for _, w := range q {
			tf := float64(d.tf[w])
			if tf == 0 {
				continue
			}
			idf := math.Log(1 + (N-float64(df[w])+0.5)/(float64(df[w])+0.5))
			score += idf * tf * (ls.BM25K1 + 1) / (tf + ls.BM25K1*(1-ls.BM25B+ls.BM25B*float64(d.n)/avg))
		}
		if score > 0 {
			hits = append(hits, sessionHit{d.s, d.text, score})
		}
	}
	sort.SliceStable(hits, func(i, j int) bool {
		if hits[i].score != hits[j].score {
			return hits[i].score > hits[j].score
		}
		return hits[i].sess.Updated.After(hits[j].sess.Updated)
	})
	return hits, nil
}

func toolSessionSearch(e *toolHost, ctx context.Context, t *toolSpec, raw json.RawMessage) toolResult {
	var a struct {
		Query, Session string
		Limit, Offset  int
	}
	json.Unmarshal(raw, &a)
	if id := strings.TrimSpace(a.Session); id != "" {
		return readSession(e, t, id, a.Offset, a.Limit)
	}
	if strings.TrimSpace(a.Query) == "" {
		return errResult(t.text("need_query"))
	}
	hits, err := searchSessions(e.st, e.perm.root, e.sess.ID, a.Query)
	if err != nil {
		return errResult(err.Error())
	}
	if len(hits) == 0 {
		return toolResult{Text: t.text("none", "query", fmt.Sprintf("%q", a.Query))}
	}
	limit := clampLimit(a.Limit, t.limit("default_limit"), t.limit("max_limit"))
	if len(hits) > limit {
		hits = hits[:limit]
	}
	n := theLibrarySpec().SessionSearch.SnippetChars
	lines := []string{t.text("head", "n", len(hits), "query", fmt.Sprintf("%q", a.Query))}
	for _, h := range hits {
		lines = append(lines, t.text("row", "id", h.sess.ID, "date", h.sess.Updated.Format("2006-01-02 15:04"),
			"title", h.sess.Title, "snippet", snippet(h.text, a.Query, n)))
	}
	return toolResult{Text: strings.Join(lines, "\n")}
}

// clampLimit is a limit argument, or the default, at most max.
func clampLimit(n, def, max int) int {
	if n <= 0 {
		n = def
	}
	return min(n, max)
}

// readSession shows a found session's prompts and answers, a page at a
// time, recall-style: numbered, each cut at message_chars.
func readSession(e *toolHost, t *toolSpec, id string, offset, limit int) toolResult {
	if !validID(id) {
		return errResult(t.text("unknown", "id", id))
	}
	s, err := e.st.read(id)
	if err != nil || s.Project != e.perm.root {
		return errResult(t.text("unknown", "id", id))
	}
	type row struct{ role, text string }
	var rows []row
	max := theLibrarySpec().SessionSearch.MessageChars
	for _, m := range s.Messages {
		if m.Undone {
			continue
		}
		switch m.Role {
		case "user":
			if m.Kind == "prompt" || m.Kind == "steer" || m.Kind == "" {
				rows = append(rows, row{"person", stripSessionNote(m.Content)})
			}
		case "assistant":
			text := m.Content
			for _, c := range m.ToolCalls {
				text = strings.TrimSpace(text + "\n(called " + c.Function.Name + ")")
			}
			if text != "" {
				rows = append(rows, row{"assistant", text})
			}
		}
	}
	from := max1(offset)
	if len(rows) == 0 || from > len(rows) {
		from = len(rows)
	}
	n := clampLimit(limit, t.limit("read_default"), t.limit("read_max"))
	to := min(from-1+n, len(rows))
	lines := []string{t.text("read_head", "id", s.ID, "date", s.Updated.Format("2006-01-02 15:04"), "title", s.Title, "from", from, "to", to, "total", len(rows))}
	for i := from - 1; i >= 0 && i < to; i++ {
		text := rows[i].text
		if len(text) > max {
			text = cutUTF8(text, max) + "…"
		}
		lines = append(lines, t.text("read_row", "n", i+1, "role", rows[i].role, "text", text))
	}
	if to < len(rows) {
		lines = append(lines, t.text("read_more", "id", s.ID, "next", to+1))
	}
	return toolResult{Text: strings.Join(lines, "\n")}
}

func max1(n int) int {
	if n < 1 {
		return 1
	}
	return n
}
