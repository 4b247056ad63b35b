package main

// undo_record.go: a file's snapshot as the session keeps it before a turn
// changes the file. Data only: taking and restoring snapshots is undo.go's.

// snapshot is one file as it was before a turn changed it.
type snapshot struct {
	Turn    int    `json:"turn"`
	Path    string `json:"path"` // absolute
	Existed bool   `json:"existed"`
	Mode    uint32 `json:"mode,omitempty"`
	Blob    string `json:"blob,omitempty"`    // file name under the session's snapshots folder
	Skipped string `json:"skipped,omitempty"` // why the content was not kept
}
