package main

// The texts apply_patch shows a model (its error messages) live in
// harness/tools/apply_patch.texts.json, not in Go; this file is the one
// place that looks them up, so moving them elsewhere later touches only it.

import (
	"encoding/json"
	"sort"
	"strings"
	"sync"
)

const patchTextsPath = "harness/tools/apply_patch.texts.json"

var (
	patchTextsOnce sync.Once
	patchTexts     map[string]string
)

// loadPatchTexts reads the template file once; a missing or broken file
// leaves the map nil so patchText degrades to the key instead of crashing
// the agent mid-edit (a test catches that case before it ships).
func loadPatchTexts() {
	data, err := harnessFS.ReadFile(patchTextsPath)
	if err != nil {
		return
	}
	var m map[string]string
	if json.Unmarshal(data, &m) == nil {
		patchTexts = m
	}
}

// patchText fills the template named key with vars. Substitution is a single
// left-to-right pass so that "{{...}}" inside a value (file content quoted in
// an error) is never expanded again; unknown placeholders are left as written.
func patchText(key string, vars map[string]string) string {
	patchTextsOnce.Do(loadPatchTexts)
	tmpl, ok := patchTexts[key]
	if !ok {
		// Degraded form: still says what went wrong, just not pretty.
		names := make([]string, 0, len(vars))
		for k := range vars {
			names = append(names, k)
		}
		sort.Strings(names)
		var b strings.Builder
		b.WriteString(key)
		for _, k := range names {
			b.WriteString(" " + k + "=" + vars[k])
		}
		return b.String()
	}
	var b strings.Builder
	for {
		i := strings.Index(tmpl, "{{")
		if i < 0 {
			break
		}
		j := strings.Index(tmpl[i+2:], "}}")
		if j < 0 {
			break
		}
		name := tmpl[i+2 : i+2+j]
		b.WriteString(tmpl[:i])
		if v, ok := vars[name]; ok {
			b.WriteString(v)
		} else {
			b.WriteString(tmpl[i : i+2+j+2])
		}
		tmpl = tmpl[i+2+j+2:]
	}
	b.WriteString(tmpl)
	return b.String()
}
