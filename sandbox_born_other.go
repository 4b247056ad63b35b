//go:build !linux

package main

import "time"

// bornAt: no birth time is read here (no OS sandbox runs commands on these
// systems, so a repository under the project is one the person approved
// the making of).
func bornAt(p string) (time.Time, bool) { return time.Time{}, false }
