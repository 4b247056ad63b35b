package main

// HTML to readable markdown, with golang.org/x/net/html's parser (which
// never fails: any input gives a tree). What a reader of the page sees is
// kept — headings, paragraphs, lists, links, images' alt text, code, quotes,
// tables as rows — and what only a browser uses (scripts, styles, forms'
// machinery, hidden elements) is dropped. Links are made absolute against
// the page's URL. Recursion stops at maxHTMLDepth; deeper nesting is
// written as plain text, so a hostile page cannot exhaust the stack.

import (
	"net/url"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// mdWriter builds the markdown: text is collapsed to single spaces outside
// pre, and block elements end lines with at most one blank line between.
type mdWriter struct {
	b      strings.Builder
	base   *url.URL
	pre    int
	list   []int // per open list: 0 for ul, the next number for ol
	quote  int
	inLink int
	space  bool // a space is pending before the next word
	depth  int
	plain  bool // text only: no markdown marks (format text)
}

// mark writes markdown syntax, which plain text leaves out.
//
//go:noinline
func (w *mdWriter) mark(s string) {
	if !w.plain {
		w.raw(s)
	}
}

// closeMark ends a mark right after the text it wraps.
func (w *mdWriter) closeMark(s string) {
	if !w.plain {
		w.b.WriteString(s)
	}
}

// maxHTMLDepth bounds the recursion: below it, a subtree is written as its
// text alone, walked without recursion, so a page of a million nested
// elements costs time, not stack.
const maxHTMLDepth = 256

// flatText writes the text of a subtree, iteratively.
func (w *mdWriter) flatText(n *html.Node) {
	stack := []*html.Node{n}
	for len(stack) > 0 {
		c := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if c.Type == html.TextNode {
			w.text(c.Data)
			continue
		}
		if c.Type == html.ElementNode && skipped[c.DataAtom] {
			continue
		}
		for k := c.LastChild; k != nil; k = k.PrevSibling {
			stack = append(stack, k)
		}
	}
}

// newline ends the current line, leaving at most n newlines in a row.
func (w *mdWriter) newline(n int) {
	s := w.b.String()
	have := len(s) - len(strings.TrimRight(s, "\n"))
	if len(strings.TrimSpace(s)) == 0 {
		return
	}
	for ; have < n; have++ {
		w.b.WriteByte('\n')
	}
	w.space = false
}

// atLineStart says whether the next text starts a line (for prefixes).
func (w *mdWriter) atLineStart() bool {
	s := w.b.String()
	return s == "" || strings.HasSuffix(s, "\n")
}

func (w *mdWriter) prefix() {
	if w.atLineStart() && w.quote > 0 {
		w.b.WriteString(strings.Repeat("> ", w.quote))
	}
}

// text writes a text node.
func (w *mdWriter) text(s string) {
	if w.pre > 0 {
		w.b.WriteString(s)
		return
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		if s != "" {
			w.space = true
		}
		return
	}
	if isBlank(s[0]) || s[0] == '\n' || s[0] == '\r' {
		w.space = true
	}
	w.prefix()
	if w.space && !w.atLineStart() {
		last := w.b.String()
		if !strings.HasSuffix(last, " ") && !strings.HasSuffix(last, "(") && !strings.HasSuffix(last, "[") {
			w.b.WriteByte(' ')
		}
	}
	w.b.WriteString(strings.Join(fields, " "))
	last := s[len(s)-1]
	w.space = isBlank(last) || last == '\n' || last == '\r'
}

func (w *mdWriter) raw(s string) {
	w.prefix()
	if w.space && !w.atLineStart() {
		w.b.WriteByte(' ')
		w.space = false
	}
	w.b.WriteString(s)
}

func hasAttr(n *html.Node, key string) bool {
	for _, a := range n.Attr {
		if a.Key == key {
			return true
		}
	}
	return false
}

//go:noinline
func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

// abs makes a link absolute against the page.
func (w *mdWriter) abs(ref string) string {
	ref = strings.TrimSpace(ref)
	if w.base == nil || ref == "" {
		return ref
	}
	u, err := w.base.Parse(ref)
	if err != nil {
		return ref
	}
	return u.String()
}

// skipped are elements whose content no reader sees.
var skipped = map[atom.Atom]bool{atom.Script: true, atom.Style: true, atom.Noscript: true, atom.Template: true,
	atom.Svg: true, atom.Iframe: true, atom.Object: true, atom.Canvas: true, atom.Head: true, atom.Select: true,
	atom.Button: true, atom.Input: true, atom.Textarea: true, atom.Form: false}

var blocks = map[atom.Atom]bool{atom.P: true, atom.Div: true, atom.Section: true, atom.Article: true, atom.Main: true,
	atom.Header: true, atom.Footer: true, atom.Nav: true, atom.Aside: true, atom.Figure: true, atom.Figcaption: true,
	atom.Dl: true, atom.Dt: true, atom.Dd: true, atom.Address: true, atom.Details: true, atom.Summary: true, atom.Form: true}

// node writes one node and its children.
func (w *mdWriter) node(n *html.Node) {
	switch n.Type {
	case html.TextNode:
		w.text(n.Data)
		return
	case html.ElementNode:
	case html.DocumentNode:
		w.children(n)
		return
	default:
		return
	}
	if skipped[n.DataAtom] || hasAttr(n, "hidden") || attr(n, "aria-hidden") == "true" {
		return
	}
	if w.depth >= maxHTMLDepth {
		w.flatText(n)
		return
	}
	w.depth++
	defer func() { w.depth-- }()
	switch n.DataAtom {
	case atom.H1, atom.H2, atom.H3, atom.H4, atom.H5, atom.H6:
		w.newline(2)
		w.mark(strings.Repeat("#", int(n.Data[1]-'0')) + " ")
		w.children(n)
		w.newline(2)
	case atom.Br:
		w.b.WriteByte('\n')
		w.space = false
	case atom.Hr:
		w.newline(2)
		w.mark("---")
		w.newline(2)
	case atom.Pre:
		w.preBlock(n)
	case atom.Code:
		w.code(n)
	case atom.Strong, atom.B:
		w.wrap(n, "**")
	case atom.Em, atom.I:
		w.wrap(n, "*")
	case atom.A:
		w.link(n)
	case atom.Img:
		w.image(n)
	case atom.Ul, atom.Ol:
		w.listBlock(n)
	case atom.Li:
		w.item(n)
	case atom.Blockquote:
		w.blockquote(n)
	case atom.Tr:
		w.newline(1)
		w.mark("|")
		w.children(n)
		w.newline(1)
	case atom.Td, atom.Th:
		w.cell(n)
	case atom.Table:
		w.newline(2)
		w.children(n)
		w.newline(2)
	default:
		if blocks[n.DataAtom] {
			w.newline(2)
			w.children(n)
			w.newline(2)
			return
		}
		w.children(n)
	}
}

// preBlock is a fenced block: its text as it is, marks and all.
func (w *mdWriter) preBlock(n *html.Node) {
	w.newline(2)
	w.mark("```\n")
	w.pre++
	w.children(n)
	w.pre--
	if !w.atLineStart() {
		w.b.WriteByte('\n')
	}
	w.closeMark("```")
	w.newline(2)
}

// code is inline code, or plain text inside a fenced block.
func (w *mdWriter) code(n *html.Node) {
	if w.pre > 0 {
		w.children(n)
		return
	}
	w.mark("`")
	w.space = w.space && w.plain
	w.children(n)
	w.closeMark("`")
}

// link is [text](absolute href); a script link, a link in a link, or plain
// text keeps only the text.
func (w *mdWriter) link(n *html.Node) {
	href := attr(n, "href")
	if w.plain || href == "" || strings.HasPrefix(strings.ToLower(strings.TrimSpace(href)), "javascript:") || w.inLink > 0 {
		w.children(n)
		return
	}
	w.raw("[")
	w.space = false
	w.inLink++
	w.children(n)
	w.inLink--
	w.b.WriteString("](" + w.abs(href) + ")")
}

// image is its alt text: as text when plain, else ![alt](src).
func (w *mdWriter) image(n *html.Node) {
	if alt := strings.TrimSpace(attr(n, "alt")); alt != "" && w.plain {
		w.text(alt)
	} else if alt != "" {
		w.raw("![" + strings.Join(strings.Fields(alt), " ") + "](" + w.abs(attr(n, "src")) + ")")
	}
}

// listBlock is a list; an ordered one numbers its items from 1.
func (w *mdWriter) listBlock(n *html.Node) {
	w.newline(1)
	start := 0
	if n.DataAtom == atom.Ol {
		start = 1
	}
	w.list = append(w.list, start)
	w.children(n)
	w.list = w.list[:len(w.list)-1]
	w.newline(2)
}

// item is a list item, indented by the lists around it.
func (w *mdWriter) item(n *html.Node) {
	w.newline(1)
	depth := len(w.list)
	marker := "- "
	if depth > 0 && w.list[depth-1] > 0 {
		marker = itoa(w.list[depth-1]) + ". "
		w.list[depth-1]++
	}
	w.raw(strings.Repeat("  ", max(depth-1, 0)) + marker)
	w.space = false
	w.children(n)
	w.newline(1)
}

// blockquote quotes its lines with "> " (plain: the text alone).
func (w *mdWriter) blockquote(n *html.Node) {
	w.newline(2)
	if !w.plain {
		w.quote++
		defer func() { w.quote-- }()
	}
	w.children(n)
	w.newline(2)
}

// cell is a table cell, closed by " |" (plain: a space).
func (w *mdWriter) cell(n *html.Node) {
	w.space = true
	w.children(n)
	if w.plain {
		w.space = true
	} else {
		w.raw(" |")
	}
}

func (w *mdWriter) wrap(n *html.Node, mark string) {
	if w.plain {
		w.children(n)
		return
	}
	w.raw(mark)
	w.space = false
	w.children(n)
	w.b.WriteString(mark)
}

//go:noinline
func (w *mdWriter) children(n *html.Node) {
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		w.node(c)
	}
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			break
		}
	}
	return string(b[i:])
}

// htmlToMarkdown turns a page into markdown; base makes links absolute. The
// page's title, when it has one, heads the result.
func htmlToMarkdown(page string, base *url.URL) string {
	return convertHTML(page, base, false)
}

// htmlToText is the page's readable text alone: the same walk without the
// marks (lists keep their - and numbers, which are text as much as marks).
func htmlToText(page string) string {
	return convertHTML(page, nil, true)
}

func convertHTML(page string, base *url.URL, plain bool) string {
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		return page
	}
	w := &mdWriter{base: base, plain: plain}
	if t := findTitle(doc); t != "" && !plain {
		w.b.WriteString("Title: " + t + "\n\n")
	}
	for c := doc.FirstChild; c != nil; c = c.NextSibling {
		w.node(c)
	}
	out := strings.Split(w.b.String(), "\n")
	for i := range out {
		out[i] = strings.TrimRight(out[i], " ")
	}
	return strings.TrimSpace(strings.Join(out, "\n"))
}

// findTitle is the text of the document's <title>.
func findTitle(n *html.Node) string {
	if n.Type == html.ElementNode && n.DataAtom == atom.Title {
		var b strings.Builder
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.TextNode {
				b.WriteString(c.Data)
			}
		}
		return strings.Join(strings.Fields(b.String()), " ")
	}
	if n.Type == html.ElementNode && n.DataAtom == atom.Body {
		return ""
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		if t := findTitle(c); t != "" {
			return t
		}
	}
	return ""
}
