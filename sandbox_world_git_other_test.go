//go:build !linux

package main

import (
	"encoding/json"
	"fmt"
)

// gitGoneCase: git's add-only layers are the Linux world's.
func gitGoneCase(input json.RawMessage) (any, error) {
	return nil, fmt.Errorf("git's layers are Linux's")
}
