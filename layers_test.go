package main

// layers_test.go: the floors of the flat package (STYLE.md §5), written
// down as data and checked the way Go's own go/build/deps_test.go checks
// the standard library's imports. lembas is one package, so the unit is the
// file: every identifier in a production file is resolved with go/types to
// the file that declares it, and a reference to a file on a higher floor
// fails the test unless the pair is on the allow-list below — a ratchet
// that may only shrink (a pair listed but no longer used fails too, so the
// list is trimmed as the upward calls move).
//
// The check runs once for each system lembas builds for (linux, darwin,
// windows), since the OS pairs (pty_*, proc_*, lock_*) differ between them.

import (
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	gotoken "go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// The floors, lowest first.
const (
	floorGround  = 1 // the spec, parsers, OS pairs, paths, events, JSON-RPC
	floorStore   = 2 // what persists and is configured
	floorWorker  = 3 // what a turn uses: tools, permissions, the sandbox, the model client, MCP, …
	floorSession = 4 // the engine and what a turn runs through
	floorFront   = 5 // the commands and the four ways in
)

var floorNames = map[int]string{1: "ground", 2: "store", 3: "worker", 4: "session", 5: "front"}

// fileFloors maps a file's name to its floor. An exact name wins, then the
// suffix rule (a subcommand's file is a front end whatever its prefix), then
// the longest prefix. A production file no rule names fails the test, so
// every new file is placed on purpose.
var fileFloors = struct {
	exact    map[string]int
	suffixes map[string]int
	prefixes map[string]int
}{
	exact: map[string]int{
		"main.go":     floorFront,
		"headless.go": floorFront,
		"sessions.go": floorFront, // the `lembas sessions` command
		"signals.go":  floorFront,
		"usage.go":    floorFront,   // the command-line table: help, completion, man page (usage_*.go)
		"startup.go":  floorSession, // what a session's start runs beside its path
		"session.go":  floorSession, // the session's assembly, for all four front ends
		"engine.go":   floorSession,
		"plan.go":     floorSession,
		"progress.go": floorSession,
		"askuser.go":  floorSession,
		"levels.go":   floorSession,
		"undo.go":     floorSession,
		"model.go":    floorWorker,
		"expand.go":   floorWorker, // @path attachments, read through containment
		"ask.go":      floorWorker, // the seam a turn asks the person through

		"journal.go":          floorStore,
		"harness.go":          floorGround,
		"atomic.go":           floorGround,
		"fs_nolinks.go":       floorGround, // opening a resolved path refusing any link on it (the file tools')
		"fs_nolinks_linux.go": floorGround,
		"fs_nolinks_other.go": floorGround,
		"contain.go":          floorWorker, // containment: the permissions' reading of a path
		"events.go":           floorGround,
		"sse.go":              floorGround,
		"ignore.go":           floorGround,
		"lazyre.go":           floorGround,
		"trace.go":            floorGround,
		"jsonrpc.go":          floorGround,
		"errors.go":           floorGround,
		"text.go":             floorGround,
		"text_width.go":       floorGround, // columns on a terminal, word wrapping
		"spell.go":            floorGround, // the nearest spelling, for errors
	},
	suffixes: map[string]int{
		"_cmd.go": floorFront,
		// A concern's record: the shape it persists and events carry,
		// data only, so the store and the events hold it without reaching
		// up; what it means stays in the concern's own files.
		"_record.go": floorGround,
	},
	prefixes: map[string]int{
		"repl":       floorFront,
		"usage_":     floorFront,
		"acp":        floorFront,
		"link":       floorFront,
		"login":      floorFront,
		"context":    floorSession,
		"jobs":       floorSession,
		"subagents":  floorSession,
		"team":       floorSession,
		"session_":   floorSession,
		"tools":      floorWorker,
		"permission": floorWorker,
		"sandbox":    floorWorker,
		"mcp":        floorWorker,
		"web":        floorWorker,
		"library":    floorWorker,
		"filepicker": floorWorker,
		"terminal":   floorWorker,
		"config":     floorStore,
		"store":      floorStore,
		"harness_":   floorGround,
		"yaml":       floorGround,
		// The shell words are the floor's reading of a command line —
		// wrappers unwrapped and parameters expanded as hardline.json says —
		// so they are the permissions' workers, not a ground parser.
		"shellwords": floorWorker,
		"pty":        floorGround,
		"proc":       floorGround,
		"lock":       floorGround,
		"jsonrpc":    floorGround,
		"spec":       floorGround,
	},
}

// floorOf is the floor of a production file, or 0 when no rule names it.
func floorOf(name string) int {
	if f, ok := fileFloors.exact[name]; ok {
		return f
	}
	for suf, f := range fileFloors.suffixes {
		if strings.HasSuffix(name, suf) {
			return f
		}
	}
	best, floor := "", 0
	for pre, f := range fileFloors.prefixes {
		if strings.HasPrefix(name, pre) && len(pre) > len(best) {
			best, floor = pre, f
		}
	}
	return floor
}

// upwardAllowed lists today's references from a file to a higher floor, as
// "from.go -> to.go". It may only shrink.
var upwardAllowed = map[string]bool{}

// layerRefs resolves every reference between the package's production files
// for one system: refs[from][to] counts the identifiers in from that name an
// object declared in to.
func layerRefs(t *testing.T, goos string, exports map[string]string, idents map[string][]string) map[string]map[string]int {
	t.Helper()
	ctx := build.Default
	ctx.GOOS = goos
	ctx.CgoEnabled = false
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := gotoken.NewFileSet()
	var files []*ast.File
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		if ok, err := ctx.MatchFile(".", n); err != nil || !ok {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		p, ok := exports[path]
		if !ok || p == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(p)
	})
	var typeErrs []error
	conf := types.Config{Importer: imp, Error: func(err error) { typeErrs = append(typeErrs, err) }}
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	pkg, _ := conf.Check("main", fset, files, info)
	// Another system's files are checked against this system's standard
	// library, so a few errors there are expected (syscall differs); on the
	// host none may stay hidden, or references could go unresolved.
	if goos == build.Default.GOOS && len(typeErrs) > 0 {
		t.Fatalf("type-checking the package: %v (and %d more)", typeErrs[0], len(typeErrs)-1)
	}
	refs := map[string]map[string]int{}
	add := func(from gotoken.Pos, obj types.Object) {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
			return
		}
		// Only package-level objects, fields and methods: a local
		// variable lives in the file that uses it.
		if obj.Parent() != nil && obj.Parent() != pkg.Scope() {
			return
		}
		src := filepath.Base(fset.Position(from).Filename)
		dst := filepath.Base(fset.Position(obj.Pos()).Filename)
		if src == dst {
			return
		}
		if refs[src] == nil {
			refs[src] = map[string]int{}
		}
		refs[src][dst]++
		if idents != nil {
			idents[src+" -> "+dst] = append(idents[src+" -> "+dst], obj.Name())
		}
	}
	for id, obj := range info.Uses {
		add(id.Pos(), obj)
	}
	return refs
}

func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-export", "-deps", "-f", "{{.ImportPath}}={{.Export}}", ".").Output()
	if err != nil {
		t.Skipf("go list -export: %v", err)
	}
	exports := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			exports[k] = v
		}
	}
	upward := map[string]int{}
	pairs := 0
	// LEMBAS_LAYERS=v names the identifiers behind each upward pair.
	var names map[string][]string
	if os.Getenv("LEMBAS_LAYERS") == "v" {
		names = map[string][]string{}
	}
	seen := map[string]bool{}
	for _, goos := range []string{build.Default.GOOS, "linux", "darwin", "windows"} {
		if seen[goos] {
			continue
		}
		seen[goos] = true
		for src, dsts := range layerRefs(t, goos, exports, names) {
			fs := floorOf(src)
			if fs == 0 {
				t.Errorf("%s: no floor names this file; add it to fileFloors in layers_test.go", src)
				continue
			}
			for dst, n := range dsts {
				fd := floorOf(dst)
				if fd == 0 {
					continue // reported as a source, or a file that refers to nothing
				}
				key := src + " -> " + dst
				if !seen["pair "+key] {
					seen["pair "+key] = true
					pairs++
				}
				if fd > fs && upward[key] < n {
					upward[key] = n
				}
			}
		}
	}
	var bad, stale []string
	for key, n := range upward {
		if !upwardAllowed[key] {
			src, dst, _ := strings.Cut(key, " -> ")
			bad = append(bad, fmt.Sprintf("%s (%s) refers up to %s (%s), %d references", src, floorNames[floorOf(src)], dst, floorNames[floorOf(dst)], n))
		}
	}
	for key := range upwardAllowed {
		if _, ok := upward[key]; !ok {
			stale = append(stale, key)
		}
	}
	sort.Strings(bad)
	sort.Strings(stale)
	for _, b := range bad {
		t.Errorf("upward reference: %s; move the piece down, or behind an interface on the lower floor (STYLE.md §5)", b)
	}
	if names != nil {
		keys := make([]string, 0, len(upward))
		for k := range upward {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			ids := names[k]
			sort.Strings(ids)
			t.Logf("%s: %s", k, strings.Join(slices.Compact(ids), " "))
		}
	}
	for _, s := range stale {
		t.Errorf("%q is allowed upward but no longer used: remove it from upwardAllowed (the list only shrinks)", s)
	}
	t.Logf("%d file pairs refer to each other, %d upward (%d allowed)", pairs, len(upward), len(upwardAllowed))
}

// TestLayersFloorOf keeps the placement rules honest: a subcommand's file is
// a front end whatever its prefix, and the longest prefix wins.
func TestLayersFloorOf(t *testing.T) {
	for name, want := range map[string]int{
		"mcp_cmd.go": floorFront, "mcp_http.go": floorWorker, "library_cmd.go": floorFront,
		"session_build.go": floorSession, "sessions.go": floorFront, "configset.go": floorStore,
		"jobs_unix.go": floorSession, "pty_linux.go": floorGround, "nosuchconcern.go": 0,
	} {
		if got := floorOf(name); got != want {
			t.Errorf("floorOf(%s) = %d, want %d", name, got, want)
		}
	}
}
