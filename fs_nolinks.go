package main

// The file tools run in lembas, outside the world, on paths the
// permission check resolved and judged (the project's, or one the person
// allowed). A process a command left running can swap a folder on such a
// path for a link between that judgement and the open (d → ~/.ssh), and
// the tool would read a key to the model or write into the person's
// files. So a tool acts only on a path its call was judged by (toolPath,
// tools_file.go), and opens it refusing any link on the way (openNoLinks:
// the path is resolved, so a link on it now is one made since); a write
// or a remove acts inside the folder so opened.

import (
	"io"
	"os"
)

// readFileNoLinks is os.ReadFile through openNoLinks.
func readFileNoLinks(path string) ([]byte, error) {
	f, err := openNoLinks(path, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
