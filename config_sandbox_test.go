package main

import (
	"strings"
	"testing"
)

// FuzzASCIIHost: any name either comes back ASCII, with as many labels as
// it had, or is refused; none takes the process down.
func FuzzASCIIHost(f *testing.F) {
	for _, s := range []string{"bücher.example", "例え.テスト", "aאb.example", "bu\u0308cher", "☃", "", ".", strings.Repeat("ü", 80)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, h string) {
		a, err := asciiHost(h)
		if err != nil {
			return
		}
		for i := 0; i < len(a); i++ {
			if a[i] >= 0x80 {
				t.Fatalf("%q came back %q, not ASCII", h, a)
			}
		}
		if strings.Count(a, ".") != strings.Count(strings.ToLower(h), ".") {
			t.Fatalf("%q came back %q with other labels", h, a)
		}
	})
}
