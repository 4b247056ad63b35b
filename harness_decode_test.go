package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"
)

// Every harness file the fast decoder reads in any test is decoded again
// by encoding/json and compared: a difference panics, whichever test
// loaded the file.
func init() {
	harnessDecodeCheck = func(name string, data []byte, v any, strict bool) {
		want := reflect.New(reflect.TypeOf(v).Elem())
		var err error
		if strict {
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			err = dec.Decode(want.Interface())
		} else {
			err = json.Unmarshal(data, want.Interface())
		}
		if err != nil {
			panic(fmt.Sprintf("harness decode: %s: the fast decoder read what encoding/json refuses: %v", name, err))
		}
		if !reflect.DeepEqual(want.Elem().Interface(), reflect.ValueOf(v).Elem().Interface()) {
			panic(fmt.Sprintf("harness decode: %s: the fast decoder's value differs from encoding/json's", name))
		}
	}
}

// TestHarnessFastDecode: the files a -p session reads are all read by
// the fast decoder (none left to encoding/json), and each equals
// encoding/json's reading (the check above).
func TestHarnessFastDecode(t *testing.T) {
	before := harnessFallbacks.Load()
	theSpec()
	if _, err := loadHardline(); err != nil {
		t.Fatal(err)
	}
	if _, err := loadBoundary(); err != nil {
		t.Fatal(err)
	}
	theSandboxSpec()
	theStoreSpec()
	theLibrarySpec()
	theReplSpec()
	theConfigKeys()
	theCLI()
	permDefaults()
	if n := harnessFallbacks.Load() - before; n > 0 {
		t.Errorf("%d harness files were left to encoding/json", n)
	}
}

type harnessFuzzT struct {
	A string            `json:"a"`
	B int               `json:"b"`
	C []string          `json:"c"`
	D map[string]int    `json:"d"`
	E *harnessFuzzT     `json:"e"`
	F any               `json:"f"`
	G json.RawMessage   `json:"g"`
	H bool              `json:"h"`
	I float64           `json:"i"`
	J map[string]string `json:"j,omitempty"`
	K uint8             `json:"k"`
	L []any             `json:"l"`
	M string            `json:"-"`
	N [2]int            `json:"n"`
}

// FuzzHarnessDecode: whatever the fast decoder reads, encoding/json reads
// too, to the same value (strict and not).
func FuzzHarnessDecode(f *testing.F) {
	f.Add([]byte(`{"a":"x\u00e9\n","b":-3,"c":["p"],"d":{"k":1},"e":{"a":"y"},"f":[1,"2",null,{"z":true}],"g":{"r": [1, 2]},"h":true,"i":1.5e3,"k":7,"l":[]}`))
	f.Add([]byte(`{"A":"case","unknown":1}`))
	f.Add([]byte(`{"c":null,"e":null,"f":"\ud83d\ude00"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, strict := range []bool{true, false} {
			var got harnessFuzzT
			if decodeHarness(data, &got, strict) != nil {
				continue
			}
			var want harnessFuzzT
			var err error
			if strict {
				dec := json.NewDecoder(bytes.NewReader(data))
				dec.DisallowUnknownFields()
				if err = dec.Decode(&want); err == nil && dec.More() {
					err = fmt.Errorf("data after the value")
				}
			} else {
				err = json.Unmarshal(data, &want)
			}
			if err != nil {
				t.Fatalf("strict %v: the fast decoder read %q, which encoding/json refuses: %v", strict, data, err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("strict %v: %q read as\n%#v\nencoding/json:\n%#v", strict, data, got, want)
			}
		}
	})
}
