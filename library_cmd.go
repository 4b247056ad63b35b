package main

// The person's side of the library: `lembas memory list|show|rm` and
// `lembas library add|list|rm|reindex`, and the REPL's /memory. Their
// texts are harness/library.json's.

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"golang.org/x/term"
)

// cmdMemory lists, shows and removes memory records of the project in
// --cwd (default: here).
func cmdMemory(args []string, stdout, stderr io.Writer) error {
	ms := theLibrarySpec().Memory
	fl := flag.NewFlagSet("memory", flag.ContinueOnError)
	fl.SetOutput(stderr)
	cwd := fl.String("cwd", ".", "the project folder")
	if len(args) == 0 {
		return usageError{ms.Usage}
	}
	verb := args[0]
	if err := fl.Parse(args[1:]); err != nil {
		return usageError{ms.Usage}
	}
	root, err := projectRoot(*cwd)
	if err != nil {
		return usageError{fmt.Sprintf("--cwd %s: %v", *cwd, err)}
	}
	rest := fl.Args()
	switch verb {
	case "list":
		out, err := listMemory(root, ms.Targets)
		fmt.Fprint(stdout, out)
		return err
	case "show":
		targets := ms.Targets
		if len(rest) == 1 {
			targets = []string{rest[0]}
		}
		for _, t := range targets {
			if !hasString(ms.Targets, t) {
				return usageError{ms.Usage}
			}
		}
		out, err := listMemory(root, targets)
		fmt.Fprint(stdout, out)
		return err
	case "rm":
		if len(rest) != 2 || !hasString(ms.Targets, rest[0]) {
			return usageError{ms.Usage}
		}
		n := 0
		if rest[1] != "--all" {
			if n, err = strconv.Atoi(rest[1]); err != nil || n < 1 {
				return usageError{ms.Usage}
			}
		}
		if _, err := removeMemory(root, rest[0], n); err != nil {
			return err
		}
		if n == 0 {
			fmt.Fprintln(stdout, fillPairs(ms.NoteCleared, "target", rest[0]))
		} else {
			fmt.Fprintln(stdout, fillPairs(ms.Removed, "n", n, "target", rest[0]))
		}
		return nil
	}
	return usageError{ms.Usage}
}

func hasString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// indexProgress draws the indexing progress on one line of a terminal
// (rewritten in place), and nothing on a pipe, where only the closing line
// is written.
type indexProgress struct {
	w   io.Writer
	tty bool
	n   int
}

func newIndexProgress(w io.Writer) *indexProgress {
	p := &indexProgress{w: w}
	if f, ok := w.(*os.File); ok {
		p.tty = term.IsTerminal(int(f.Fd()))
	}
	return p
}

func (p *indexProgress) update(done, total, pieces int) {
	if !p.tty {
		return
	}
	s := fillPairs(theLibrarySpec().Library.Progress, "done", done, "total", total, "pieces", pieces)
	fmt.Fprintf(p.w, "\r%s\x1b[K", s)
	p.n++
}

func (p *indexProgress) end() {
	if p.tty && p.n > 0 {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

// cmdLibrary adds, lists and removes knowledge sources; each change
// updates the index (incrementally) with a progress line.
func cmdLibrary(args []string, stdout, stderr io.Writer) error {
	ls := theLibrarySpec().Library
	if len(args) == 0 {
		return usageError{ls.Usage}
	}
	srcs, err := loadSources()
	if err != nil {
		return err
	}
	switch args[0] {
	case "add":
		if len(args) < 2 {
			return usageError{ls.Usage}
		}
		for _, a := range args[1:] {
			abs, err := filepath.Abs(a)
			if err == nil {
				abs, err = filepath.EvalSymlinks(abs)
			}
			if err != nil {
				return errorf("library add %s: %v; give a file or folder that exists", a, err)
			}
			found := ""
			for _, s := range srcs {
				if s.Path == abs {
					found = s.ID
				}
			}
			if found != "" {
				fmt.Fprintln(stdout, fillPairs(ls.Already, "path", abs, "id", found))
				continue
			}
			s := knowledgeSource{ID: "s" + libHash(abs, 6), Path: abs, Added: time.Now()}
			srcs = append(srcs, s)
			fmt.Fprintln(stdout, fillPairs(ls.Added, "path", abs, "id", s.ID))
		}
		if err := saveSources(srcs); err != nil {
			return err
		}
	case "rm":
		if len(args) != 2 {
			return usageError{ls.Usage}
		}
		target := args[1]
		abs, _ := filepath.Abs(target)
		var kept []knowledgeSource
		var gone *knowledgeSource
		for i, s := range srcs {
			if s.ID == target || s.Path == abs || s.Path == target {
				gone = &srcs[i]
				continue
			}
			kept = append(kept, s)
		}
		if gone == nil {
			return errorf("%s", fillPairs(ls.Unknown, "id", target))
		}
		if err := saveSources(kept); err != nil {
			return err
		}
		fmt.Fprintln(stdout, fillPairs(ls.Removed, "id", gone.ID, "path", gone.Path))
	case "list":
		if len(args) != 1 {
			return usageError{ls.Usage}
		}
		if len(srcs) == 0 {
			fmt.Fprintln(stdout, ls.ListEmpty)
			return nil
		}
	case "reindex":
	default:
		return usageError{ls.Usage}
	}
	pl := newIndexProgress(stderr)
	ix, emb, st, err := updateKnowledge(context.Background(), pl.update)
	pl.end()
	if err != nil {
		return err
	}
	if args[0] == "list" {
		byPath := map[string]*docIndex{}
		for _, d := range ix.load().docs {
			byPath[d.Path] = d
		}
		for _, s := range srcs {
			fmt.Fprintf(stdout, "%s  %s\n", s.ID, s.Path)
			var docs []*docIndex
			for p, d := range byPath {
				if p == s.Path || within(s.Path, p) {
					docs = append(docs, d)
				}
			}
			sort.Slice(docs, func(i, j int) bool { return docs[i].Path < docs[j].Path })
			for _, d := range docs {
				fmt.Fprintln(stdout, "  "+fillPairs(ls.ListRow, "id", d.ID, "pieces", len(d.Pieces), "path", d.Path))
			}
		}
	}
	for _, e := range st.Errors {
		fmt.Fprintln(stderr, "lembas: "+e)
	}
	fmt.Fprintln(stderr, fillPairs(ls.ProgressDone, "files", st.Files, "changed", st.Changed, "removed", st.Removed, "pieces", st.Pieces, "how", howText(emb)))
	if len(st.Errors) > 0 {
		return exitError{code: exitFailure}
	}
	return nil
}

// replMemory is the REPL's /memory: the records listed, or one removed
// (/memory rm user 2), which the model hears of in the next session note.
func (r *repl) replMemory(args string) {
	ms := theLibrarySpec().Memory
	root := r.e.perm.root
	f := strings.Fields(args)
	if len(f) == 0 || f[0] == "list" {
		out, err := listMemory(root, ms.Targets)
		if err != nil {
			r.say("error", r.text("error", "text", err.Error()))
			return
		}
		r.say("status", strings.TrimRight(out, "\n"))
		return
	}
	if f[0] != "rm" || len(f) != 3 || !hasString(ms.Targets, f[1]) {
		r.say("error", r.text("error", "text", strings.Replace(ms.Usage, "lembas memory", "/memory", 1)))
		return
	}
	n := 0
	if f[2] != "--all" {
		var err error
		if n, err = strconv.Atoi(f[2]); err != nil || n < 1 {
			r.say("error", r.text("error", "text", strings.Replace(ms.Usage, "lembas memory", "/memory", 1)))
			return
		}
	}
	note, err := removeMemory(root, f[1], n)
	if err != nil {
		r.say("error", r.text("error", "text", err.Error()))
		return
	}
	r.e.sess.Notes = append(r.e.sess.Notes, note)
	r.e.st.save(r.e.sess)
	if n == 0 {
		r.say("status", fillPairs(ms.NoteCleared, "target", f[1]))
	} else {
		r.say("status", fillPairs(ms.Removed, "n", n, "target", f[1]))
	}
}
