package main

import "testing"

// makeRecipes spells a Makefile's recipes as shell lines.
func TestMakeRecipes(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"all:\n\t@rm -rf $(HOME)\n", "rm -rf $HOME"},
		{"x: ; find ~ -delete\n", "find ~ -delete"},
		{"V := a\nW = b:c\nt:\n\t-rm -rf \\\n\t  /\n", "rm -rf  \t  /"},
		{"t:\n\tfor d in a b; do rm -rf \"$$d\"; done\n", "for d in a b; do rm -rf \"$d\"; done"},
		{"t: dep\n\trm -f $@ ${OBJ} $<\n\t# a comment\n", "rm -f MAKEVAR MAKEVAR MAKEVAR"},
	} {
		if got := makeRecipes(c.in); got != c.want {
			t.Errorf("makeRecipes(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
