package main

// Expanding what a person typed before it becomes a prompt: a leading
// /command becomes its text, and @path mentions attach files from the
// project. Every front end (the REPL, ACP, the link) goes through here so
// they expand the same way.

// expansion is a prompt after expansion.
type expansion struct {
	Text     string      // what the model is sent
	Images   []imagePart // images attached by @path (vision models only)
	Attached []string    // project-relative paths that were attached
}

// expandPrompt expands text typed in the project at root. This first
// version passes the text through unchanged; the REPL issue brings
// /commands and @path mentions here.
func expandPrompt(root, text string, vision bool) (expansion, error) {
	return expansion{Text: text}, nil
}
