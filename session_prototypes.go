package main

// A prototype's page named in the transcript (harness README 1.1.0: "a
// prototype written in the terminal is saved as a file and named in the
// transcript"; acp.md capability prototypes). A prototype is files the
// model writes in the project under prototypes/<name>/; when its page,
// index.html, is written the engine says so with a notice — the REPL
// prints it, -p writes it to stderr (stream-json carries the event), and
// the link and a shared session send it to the web UI as any event. The
// notice names the page by its path and, when it has one, its <title>, as
// show would name the file.

import (
	"encoding/json"
	"path"
	"strings"

	"golang.org/x/net/html"
)

// prototypePage is the page a written path makes, as the transcript names
// it: prototypes/<name>/index.html (slash-separated, relative), "" for any
// other path.
func prototypePage(p string) string {
	p = path.Clean(strings.ReplaceAll(strings.TrimPrefix(p, "./"), "\\", "/"))
	parts := strings.Split(p, "/")
	if len(parts) == 3 && parts[0] == "prototypes" && parts[1] != "" && parts[1] != ".." && strings.EqualFold(parts[2], "index.html") {
		return p
	}
	return ""
}

// prototypeWritten is the page a finished write made and the page's
// title, "" for any other event.
func prototypeWritten(ev event) (page, title string) {
	if ev.Type != evToolEnd || ev.Tool == nil || ev.Tool.Name != "write" || ev.Tool.IsError {
		return "", ""
	}
	var a struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	json.Unmarshal([]byte(ev.Tool.Input), &a)
	if page = prototypePage(a.Path); page == "" {
		return "", ""
	}
	if doc, err := html.Parse(strings.NewReader(a.Content)); err == nil {
		title = cutRunes(findTitle(doc), 120)
	}
	return page, title
}

// prototypeNotice is the transcript's line for a prototype's page written
// (tools/write.json texts), "" for any other event. viewer: the session
// has one, so the person may ask for the page to be shown.
func prototypeNotice(ev event, viewer bool) string {
	page, title := prototypeWritten(ev)
	if page == "" {
		return ""
	}
	t := theSpec().Tools["write"]
	name := page
	if title != "" {
		name = t.text("prototype_titled", "path", page, "title", title)
	}
	key := "prototype_written"
	if viewer {
		key = "prototype_written_viewer"
	}
	return t.text(key, "page", name)
}
