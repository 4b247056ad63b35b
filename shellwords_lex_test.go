package main

import "testing"

func TestCleanWordPath(t *testing.T) {
	for in, want := range map[string]string{
		"/":         "/",
		"//":        "/",
		"/.":        "/",
		"/./":       "/",
		"/usr//lib": "/usr/lib",
		"/etc/.":    "/etc",
		"/etc/":     "/etc/",
		"/a/./b/":   "/a/b/",
		"./a//b":    "./a//b",
		"of=//dev":  "of=/dev",
		"x":         "x",
		"/a/../b":   "/a/../b",
	} {
		if got := cleanWordPath(in); got != want {
			t.Errorf("cleanWordPath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBraceSequence(t *testing.T) {
	got, ok := braceSequence("5..1..2", 100)
	if !ok || len(got) != 3 || got[0] != "5" || got[2] != "1" {
		t.Errorf("got %q, %v", got, ok)
	}
	if _, ok := braceSequence("a..", 100); ok {
		t.Error("a.. read as a sequence")
	}
}
