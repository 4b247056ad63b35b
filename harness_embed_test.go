package main

// The conformance cases are not embedded (harness.go): tests read them
// from the source tree, through the same harnessFS, and hold that the
// embed has every other harness file and that areas.txt names every area.

import (
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"testing"
)

// testHarnessFS is the embedded harness with the conformance cases added
// from disk, as tests read it.
type testHarnessFS struct{}

func isConformanceCase(name string) bool {
	return path.Dir(name) == "harness/conformance" && strings.HasSuffix(name, ".json")
}

func (testHarnessFS) Open(name string) (fs.File, error) {
	if isConformanceCase(name) {
		return os.DirFS(".").Open(name)
	}
	return harnessEmbed.Open(name)
}

// Glob and ReadDir list the conformance folder as it is on disk.
func (testHarnessFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if name == "harness/conformance" {
		return os.ReadDir(name)
	}
	return harnessEmbed.ReadDir(name)
}

func init() { harnessFS = harnessFiles{testHarnessFS{}} }

// TestHarnessEmbedded: every file under harness/ is in the binary but the
// conformance cases, and none of those is (harness.go's embed patterns).
func TestHarnessEmbedded(t *testing.T) {
	err := fs.WalkDir(os.DirFS("."), "harness", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		_, eerr := fs.Stat(harnessEmbed, p)
		switch {
		case isConformanceCase(p) && eerr == nil:
			t.Errorf("%s is embedded: the cases are tests, not for the binary", p)
		case !isConformanceCase(p) && eerr != nil:
			t.Errorf("%s is not embedded: add its folder or pattern to harness.go's //go:embed", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestConformanceAreasListed: areas.txt names exactly the areas that have
// a file, so the announced version reads the same evidence as go test.
func TestConformanceAreasListed(t *testing.T) {
	files, _ := fs.Glob(os.DirFS("."), "harness/conformance/*.json")
	var want []string
	for _, f := range files {
		want = append(want, strings.TrimSuffix(path.Base(f), ".json"))
	}
	var got []string
	for a := range conformanceAreas(harnessEmbed) {
		got = append(got, a)
	}
	sort.Strings(got)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("harness/conformance/areas.txt must list each area with a file, one a line, sorted:\n%s\nit lists:\n%s", strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}
