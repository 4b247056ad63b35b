package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	gotoken "go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestHelperStartup is not a test: TestStartupDoesNoWork runs the test
// binary as this helper, which runs `lembas --version` and `--help` in
// process and says what was parsed or compiled on the way.
func TestHelperStartup(t *testing.T) {
	if os.Getenv("LEMBAS_STARTUP_HELPER") == "" {
		t.Skip("a helper process for TestStartupDoesNoWork")
	}
	run([]string{"--version"}, nil, io.Discard, io.Discard)
	run([]string{"--help"}, nil, io.Discard, io.Discard)
	fmt.Printf("spec=%v acp=%v store=%v regexps=%v\n", specVal != nil, acpSpecFile.val != nil, storeSpecFile.val != nil,
		reVar.re != nil || reCommandName.re != nil || unifiedRange.re != nil)
}

// TestStartupDoesNoWork: --version and --help parse no harness file and
// compile no regexp; no package-level var compiles one; and the binary's
// own init does a few dozen allocations, not the hundreds it did when the
// regexps were compiled at start.
func TestStartupDoesNoWork(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperStartup$", "-test.count=1")
	cmd.Env = append(os.Environ(), "LEMBAS_STARTUP_HELPER=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "spec=false acp=false store=false regexps=false") {
		t.Errorf("--version and --help did work on the way: %v\n%s", err, out)
	}

	names, _ := filepath.Glob("*.go")
	fset := gotoken.NewFileSet()
	for _, n := range names {
		if strings.HasSuffix(n, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, n, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != gotoken.VAR {
				continue
			}
			// A call of regexp.X in a package-level var runs at start-up;
			// a var of type *regexp.Regexp filled later does not, and a
			// function literal's body runs only when called.
			ast.Inspect(g, func(x ast.Node) bool {
				if _, ok := x.(*ast.FuncLit); ok {
					return false
				}
				if c, ok := x.(*ast.CallExpr); ok {
					if s, ok := c.Fun.(*ast.SelectorExpr); ok {
						if id, ok := s.X.(*ast.Ident); ok && id.Name == "regexp" {
							t.Errorf("%s: a package-level var calls regexp.%s at start-up; use lazyRE", fset.Position(s.Pos()), s.Sel.Name)
						}
					}
				}
				return true
			})
		}
	}

	bin := lembasBin(t)
	v := exec.Command(bin, "--version")
	v.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	trace, err := v.CombinedOutput()
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`init main @\S+ ms, \S+ ms clock, (\d+) bytes, (\d+) allocs`).FindSubmatch(trace)
	if m == nil {
		t.Fatalf("no init trace of main:\n%s", trace)
	}
	if allocs, _ := strconv.Atoi(string(m[2])); allocs > 100 {
		t.Errorf("init main made %s allocations (%s bytes); keep start-up work lazy (lazyre.go)", m[2], m[1])
	}
}
