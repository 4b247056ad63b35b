package main

// Conformance area chunk: the character rule of indexing — what text a
// piece of tokens is (library_index.go tokenize, spanText).

import (
	"encoding/json"
	"unicode/utf8"
)

func init() {
	conformanceRunners["chunk"] = func(in json.RawMessage) (any, error) {
		var c struct {
			Text    string `json:"text"`
			Max     int    `json:"max"`
			Overlap int    `json:"overlap"`
		}
		if err := json.Unmarshal(in, &c); err != nil {
			return nil, err
		}
		toks := tokenize(c.Text)
		pieces := []map[string]any{}
		for _, s := range chunkSpans(0, len(toks), c.Max, c.Overlap) {
			t := spanText(c.Text, toks, s)
			pieces = append(pieces, map[string]any{"text": t, "chars": utf8.RuneCountInString(t), "valid": utf8.ValidString(t)})
		}
		return map[string]any{"tokens": len(toks), "pieces": pieces}, nil
	}
}
