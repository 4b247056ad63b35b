//go:build linux

package main

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// TestParseBinarySpans: only the executable's private, read-only mappings
// with no copied page are released; a PIE's relocated read-only data (an
// r--p mapping with anonymous pages), the writable data, other files and
// anonymous memory never are.
func TestParseBinarySpans(t *testing.T) {
	smaps := `00400000-00998000 r-xp 00000000 fe:00 10142477                           /opt/my lembas
Size:               5728 kB
Rss:                3936 kB
Anonymous:             0 kB
00998000-00f26000 r--p 00598000 fe:00 10142477                           /opt/my lembas
Rss:                2520 kB
Anonymous:             0 kB
00f26000-00f30000 r--p 00b26000 fe:00 10142477                           /opt/my lembas
Rss:                  40 kB
Anonymous:            12 kB
00f30000-00f85000 rw-p 00b30000 fe:00 10142477                           /opt/my lembas
Anonymous:            80 kB
00fc3000-03006000 rw-p 00000000 00:00 0
Anonymous:           112 kB
7f0000000000-7f0000010000 r-xp 00000000 fe:00 777                        /usr/lib/other.so
Anonymous:             0 kB
7f0000010000-7f0000020000 r-xs 00000000 fe:00 10142477                   /opt/my lembas
Anonymous:             0 kB
`
	got := parseBinarySpans([]byte(smaps), "/opt/my lembas")
	want := [][2]uintptr{{0x400000, 0x998000}, {0x998000, 0xf26000}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("spans = %x, want %x", got, want)
	}
	if got := parseBinarySpans([]byte(smaps), "/opt/other"); len(got) != 0 {
		t.Errorf("another executable's spans = %x, want none", got)
	}
}

func FuzzParseBinarySpans(f *testing.F) {
	f.Add([]byte("00400000-00998000 r-xp 00000000 fe:00 1 /x\nAnonymous: 0 kB\n"), "/x")
	f.Add([]byte("ffffffff-00000000 r--p 0 0 0 /x\nAnonymous:\n-\n"), "/x")
	f.Fuzz(func(t *testing.T, b []byte, exe string) {
		for _, s := range parseBinarySpans(b, exe) {
			if s[1] <= s[0] {
				t.Fatalf("span %x is empty or reversed", s)
			}
		}
	})
}

// exeRss is the resident KB of this process's mappings of its own
// executable that releaseBinaryPages may drop.
func exeRss(t *testing.T) int {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Skip(err)
	}
	b, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	kb, in := 0, false
	for _, l := range bytes.Split(b, []byte{'\n'}) {
		f := bytes.Fields(l)
		switch {
		case len(f) >= 6 && !bytes.HasSuffix(f[0], []byte(":")):
			in = string(bytes.Join(f[5:], []byte{' '})) == exe && f[1][1] != 'w'
		case in && len(f) >= 2 && string(f[0]) == "Rss:":
			n, _ := strconv.Atoi(string(f[1]))
			kb += n
		}
	}
	return kb
}

// TestReleaseBinaryPages: with every page of the test binary's text and
// rodata resident, a release leaves less than half of them mapped (what
// runs after it comes back), and the code goes on running.
func TestReleaseBinaryPages(t *testing.T) {
	binaryPages.once.Do(func() { binaryPages.spans = binarySpans() })
	if len(binaryPages.spans) == 0 {
		t.Fatal("no read-only mapping of the executable found in /proc/self/smaps")
	}
	mem, err := os.Open("/proc/self/mem")
	if err != nil {
		t.Skip(err)
	}
	defer mem.Close()
	for _, s := range binaryPages.spans {
		if _, err := mem.ReadAt(make([]byte, s[1]-s[0]), int64(s[0])); err != nil { // every page resident
			t.Fatal(err)
		}
	}
	before := exeRss(t)
	releaseBinaryPages()
	after := exeRss(t)
	t.Logf("executable's read-only pages resident: %d KB, then %d KB after the release", before, after)
	if after*2 > before {
		t.Errorf("resident after the release %d KB, before %d KB: want under half", after, before)
	}
	if s := strconv.Itoa(42) + string(bytes.ToUpper([]byte("ok"))); s != "42OK" {
		t.Errorf("code after the release: %q", s)
	}
}
