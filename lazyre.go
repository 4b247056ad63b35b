package main

// lazyre.go: start-up stays near a bare Go binary. Nothing is parsed or
// compiled while the program starts: `lembas --version` and `--help` run
// no harness parsing and no regexp compilation. The harness files are
// parsed on first use (theSpec, theACPSpec, theStoreSpec); a regular
// expression the code needs is a lazyRegexp, compiled the first time it is
// matched. To keep it so, never write a package-level regexp.MustCompile
// or an init func that does more than fill a map
// (TestStartupDoesNoWork checks with GODEBUG=inittrace=1).

import (
	"regexp"
	"sync"
)

// lazyRegexp is a regular expression compiled on first use, once. It has
// the methods of *regexp.Regexp the code calls, so a package-level
// `var reX = lazyRE(...)` reads like a compiled one.
type lazyRegexp struct {
	src  string
	once sync.Once
	re   *regexp.Regexp
}

func lazyRE(src string) *lazyRegexp { return &lazyRegexp{src: src} }

func (l *lazyRegexp) get() *regexp.Regexp {
	l.once.Do(func() { l.re = regexp.MustCompile(l.src) })
	return l.re
}

func (l *lazyRegexp) MatchString(s string) bool { return l.get().MatchString(s) }

func (l *lazyRegexp) FindString(s string) string { return l.get().FindString(s) }

func (l *lazyRegexp) FindStringSubmatch(s string) []string { return l.get().FindStringSubmatch(s) }

func (l *lazyRegexp) FindAllString(s string, n int) []string { return l.get().FindAllString(s, n) }

func (l *lazyRegexp) FindAllStringSubmatch(s string, n int) [][]string {
	return l.get().FindAllStringSubmatch(s, n)
}

func (l *lazyRegexp) FindStringIndex(s string) []int { return l.get().FindStringIndex(s) }

func (l *lazyRegexp) ReplaceAllString(s, repl string) string {
	return l.get().ReplaceAllString(s, repl)
}

func (l *lazyRegexp) ReplaceAllStringFunc(s string, f func(string) string) string {
	return l.get().ReplaceAllStringFunc(s, f)
}

func (l *lazyRegexp) String() string { return l.src }
