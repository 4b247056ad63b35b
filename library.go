package main

// What the agent knows beyond the project's files: the stacked instruction
// files, skills, memory, the local library (notes and knowledge documents)
// and the search over earlier sessions. Every number and sentence is
// harness/library.json's or a tool JSON's; this file holds the spec, the
// instruction stack and the parts of the system prompt, and the engine's
// hook for what changed since the prompt was made.
//
//	systemPrompt (context.go) ──► stackedInstructions ─┐
//	                           ├─► skillsPrompt        ├─► the fixed prefix, made once
//	                           ├─► memoryPrompt        │
//	                           └─► libraryBlock       ─┘
//	withNote (context.go) ──► e.libraryNotes: an instruction file changed → <session-note>
//
// library_skills.go: SKILL.md discovery, skills_list/skill_view/skill_manage,
// skills as slash commands. library_memory.go: the memory tool and records.
// library_search.go: session_search. library_index.go: tokens, pieces, BM25,
// embeddings and the index files. library_notes.go: notes, knowledge and the
// `lembas memory|library` commands.
//
// A worker (floor 3): its tools run on tools_session.go's toolHost; it
// calls the store, the config and the ground, never the engine.

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// librarySpec is harness/library.json.
type librarySpec struct {
	About        string `json:"about"`
	Instructions struct {
		About         string   `json:"about"`
		Files         []string `json:"files"`
		Global        string   `json:"global"`
		Boundary      string   `json:"boundary"`
		MaxBytes      int      `json:"max_bytes"`
		ImportDepth   int      `json:"import_depth"`
		Head          string   `json:"head"`
		FileHead      string   `json:"file_head"`
		Cut           string   `json:"cut"`
		ImportCycle   string   `json:"import_cycle"`
		ImportDeep    string   `json:"import_deep"`
		ImportOutside string   `json:"import_outside"`
		ImportProt    string   `json:"import_protected"`
		Changed       string   `json:"changed"`
		Added         string   `json:"added"`
		Removed       string   `json:"removed"`
	} `json:"instructions"`
	Skills struct {
		About              string   `json:"about"`
		ProjectFolders     []string `json:"project_folders"`
		UserFolder         string   `json:"user_folder"`
		File               string   `json:"file"`
		NameRule           string   `json:"name_rule"`
		MaxDescription     int      `json:"max_description"`
		PromptMaxBytes     int      `json:"prompt_max_bytes"`
		MaxBodyBytes       int      `json:"max_body_bytes"`
		Head               string   `json:"head"`
		Row                string   `json:"row"`
		Cut                string   `json:"cut"`
		Command            string   `json:"command"`
		CommandArguments   string   `json:"command_arguments"`
		CommandDescription string   `json:"command_description"`
	} `json:"skills"`
	Memory struct {
		About       string   `json:"about"`
		Targets     []string `json:"targets"`
		Head        string   `json:"head"`
		TargetHead  string   `json:"target_head"`
		Row         string   `json:"row"`
		NoteRemoved string   `json:"note_removed"`
		NoteCleared string   `json:"note_cleared"`
		ListHead    string   `json:"list_head"`
		ListRow     string   `json:"list_row"`
		ListEmpty   string   `json:"list_empty"`
		Removed     string   `json:"removed"`
		NoRecord    string   `json:"no_record"`
		Usage       string   `json:"usage"`
	} `json:"memory"`
	SessionSearch struct {
		About        string `json:"about"`
		SnippetChars int    `json:"snippet_chars"`
		MessageChars int    `json:"message_chars"`
	} `json:"session_search"`
	Library struct {
		About             string   `json:"about"`
		ChunkTokens       int      `json:"chunk_tokens"`
		OverlapTokens     int      `json:"overlap_tokens"`
		BM25K1            float64  `json:"bm25_k1"`
		BM25B             float64  `json:"bm25_b"`
		RRFK              float64  `json:"rrf_k"`
		EmbedBatch        int      `json:"embed_batch"`
		IndexWorkers      int      `json:"index_workers"`
		EmbedTimeoutS     int      `json:"embed_timeout_s"`
		MaxFileBytes      int      `json:"max_file_bytes"`
		MaxFiles          int      `json:"max_files"`
		SnippetChars      int      `json:"snippet_chars"`
		Extensions        []string `json:"extensions"`
		Progress          string   `json:"progress"`
		ProgressDone      string   `json:"progress_done"`
		HowBoth           string   `json:"how_both"`
		HowBM25           string   `json:"how_bm25"`
		Usage             string   `json:"usage"`
		Added             string   `json:"added"`
		Already           string   `json:"already"`
		Removed           string   `json:"removed"`
		Unknown           string   `json:"unknown"`
		ListEmpty         string   `json:"list_empty"`
		ListRow           string   `json:"list_row"`
		EmbedRefusedToken string   `json:"embed_refused_token"`
		NoEmbeddingModel  string   `json:"no_embedding_model"`
	} `json:"library"`
}

// theLibrarySpec parses harness/library.json on first use. It is read here
// rather than in loadSpec so a process that never touches the library does
// not pay for it; a broken file is a build-time bug that TestLibrarySpec
// catches, so at run time it panics like theSpec.
//
//go:noinline
func theLibrarySpec() *librarySpec { return librarySpecFile.get() }

var librarySpecFile = &harnessFile[librarySpec]{name: "harness/library.json"}

// folderTrusted says whether files of a folder may reach the prompt: not
// when the person said the project, or that folder, is not to be trusted.
// A folder never asked about is used, as projectInstructions always did: a
// script or an editor runs where its person chose to run it.
func folderTrusted(root, dir string) bool {
	if t, known := trustOf(root); known && !t {
		return false
	}
	if dir != root {
		if t, known := trustOf(dir); known && !t {
			return false
		}
	}
	return true
}

// instrFile is one instruction file of the stack, its imports resolved.
type instrFile struct {
	Path  string // absolute, for reading again
	Shown string // as the prompt names it: never an absolute path
	Text  string
}

// instructionBoundary is the outermost folder whose instruction file is
// read: the nearest folder at or above root holding the boundary marker
// (.git, a folder or a worktree's file), else root itself.
func instructionBoundary(root string) string {
	marker := theLibrarySpec().Instructions.Boundary
	for dir := root; ; {
		if _, err := os.Lstat(filepath.Join(dir, marker)); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return root
		}
		dir = parent
	}
}

// instructionStack finds the instruction files for a project, outermost
// first: the person's global one, then one per folder from the boundary
// down to root (the first of files that exists and is not empty). A folder
// that is not trusted gives none.
func instructionStack(root string) []instrFile {
	in := theLibrarySpec().Instructions
	var out []instrFile
	global := filepath.Join(configDir(), in.Global)
	if text, ok := readInstruction(global); ok {
		out = append(out, instrFile{Path: global, Shown: "global " + in.Global,
			Text: resolveImports(text, global, configDir(), 0, map[string]bool{global: true})})
	}
	boundary := instructionBoundary(root)
	var dirs []string
	for dir := root; ; dir = filepath.Dir(dir) {
		dirs = append(dirs, dir)
		if dir == boundary || filepath.Dir(dir) == dir {
			break
		}
	}
	for i := len(dirs) - 1; i >= 0; i-- {
		dir := dirs[i]
		if !folderTrusted(root, dir) {
			continue
		}
		for _, name := range in.Files {
			p := filepath.Join(dir, name)
			text, ok := readInstruction(p)
			if !ok {
				continue
			}
			shown, _ := filepath.Rel(root, p)
			out = append(out, instrFile{Path: p, Shown: filepath.ToSlash(shown),
				Text: resolveImports(text, p, boundary, 0, map[string]bool{p: true})})
			break
		}
	}
	return out
}

// readInstruction reads one file, trimmed; an empty or unreadable one is
// not there.
func readInstruction(p string) (string, bool) {
	st, err := os.Stat(p)
	if err != nil || !st.Mode().IsRegular() {
		return "", false
	}
	data, err := os.ReadFile(p)
	text := strings.TrimSpace(strings.ReplaceAll(string(data), "\r\n", "\n"))
	return text, err == nil && text != ""
}

// resolveImports replaces each line that is only "@path" with that file's
// text, itself resolved, so an instruction file can pull in a shared one.
// The path is relative to the importing file (or ~/ for the home folder)
// and must stay inside within (the boundary, or the config folder for the
// global file), must not be a protected file, and the chain may go
// import_depth deep; a cycle or a path outside is refused with a line
// saying so. A line naming no existing file stays as it is: "@team" may
// just be a word.
func resolveImports(text, from, within_ string, depth int, seen map[string]bool) string {
	in := theLibrarySpec().Instructions
	if !strings.Contains(text, "@") {
		return text
	}
	// The project's files may not import a protected one (.env, keys);
	// the global file's folder is the person's own config folder, which
	// the floor protects from the model but which they wrote themselves.
	var prot *permissions
	if !within(configDir(), from) {
		prot, _ = newPermissionsFrom("manual", within_, true, &config{})
	}
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(text))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	first := true
	for sc.Scan() {
		line := sc.Text()
		if !first {
			b.WriteByte('\n')
		}
		first = false
		t := strings.TrimSpace(line)
		if len(t) < 2 || t[0] != '@' || strings.ContainsAny(t, " \t") {
			b.WriteString(line)
			continue
		}
		name := t[1:]
		p := name
		if strings.HasPrefix(p, "~/") {
			p = filepath.Join(homeDir(), p[2:])
		} else if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(from), p)
		}
		abs := evalExisting(filepath.Clean(p))
		st, err := os.Stat(abs)
		if err != nil || !st.Mode().IsRegular() {
			b.WriteString(line)
			continue
		}
		isProt := false
		if prot != nil {
			_, isProt = prot.protectedFor(abs)
		}
		switch {
		case !within(evalExisting(within_), abs):
			b.WriteString(fillPairs(in.ImportOutside, "path", name))
		case isProt:
			b.WriteString(fillPairs(in.ImportProt, "path", name))
		case seen[abs]:
			b.WriteString(fillPairs(in.ImportCycle, "path", name))
		case depth+1 > in.ImportDepth:
			b.WriteString(fillPairs(in.ImportDeep, "path", name, "depth", in.ImportDepth))
		default:
			sub, ok := readInstruction(abs)
			if !ok {
				b.WriteString(line)
				continue
			}
			seen[abs] = true
			b.WriteString(resolveImports(sub, abs, within_, depth+1, seen))
			delete(seen, abs) // a file imported twice side by side is not a cycle
		}
	}
	return b.String()
}

// stackedInstructions renders the stack for the system prompt under the
// total cap. The budget is spent from the nearest file outwards — the
// nearer a file, the more it says about this folder — while the files are
// shown outermost first; what did not fit is named in the cut line.
func stackedInstructions(root string) string {
	return renderInstructions(instructionStack(root))
}

func renderInstructions(files []instrFile) string {
	in := theLibrarySpec().Instructions
	if len(files) == 0 {
		return ""
	}
	budget := in.MaxBytes
	texts := make([]string, len(files))
	var left []string
	for i := len(files) - 1; i >= 0; i-- {
		t := files[i].Text
		switch {
		case budget <= 0:
			left = append(left, files[i].Shown)
			t = ""
		case len(t) > budget:
			t = cutUTF8(t, budget)
			left = append(left, files[i].Shown+" (the end)")
			budget = 0
		default:
			budget -= len(t)
		}
		texts[i] = t
	}
	var b strings.Builder
	b.WriteString(in.Head)
	for i, f := range files {
		if texts[i] == "" {
			continue
		}
		b.WriteString("\n" + fillPairs(in.FileHead, "file", f.Shown) + "\n" + texts[i])
	}
	if len(left) > 0 {
		sort.Strings(left)
		b.WriteString("\n" + fillPairs(in.Cut, "max", in.MaxBytes, "files", strings.Join(left, ", ")))
	}
	return b.String()
}

// instructionSnapshot is what each instruction file said, by its shown
// name, so a later look can tell what changed.
func instructionSnapshot(files []instrFile) map[string]string {
	m := make(map[string]string, len(files))
	for _, f := range files {
		m[f.Shown] = f.Text
	}
	return m
}

// instructionChanges compares the stack now with an earlier snapshot and
// says, in the spec's words, each file that changed, appeared or went.
func instructionChanges(before map[string]string, now []instrFile) []string {
	in := theLibrarySpec().Instructions
	var notes []string
	seen := map[string]bool{}
	for _, f := range now {
		seen[f.Shown] = true
		old, had := before[f.Shown]
		switch {
		case !had:
			notes = append(notes, fillPairs(in.Added, "file", f.Shown, "text", f.Text))
		case old != f.Text:
			notes = append(notes, fillPairs(in.Changed, "file", f.Shown, "text", f.Text))
		}
	}
	var gone []string
	for name := range before {
		if !seen[name] {
			gone = append(gone, name)
		}
	}
	sort.Strings(gone)
	for _, name := range gone {
		notes = append(notes, fillPairs(in.Removed, "file", name))
	}
	return notes
}

// libraryState is what the library keeps for one engine: the instruction
// files as the session's prompt saw them.
type libraryState struct {
	mu      mutex
	instrAt map[string]string // nil until first looked at
}

// lib returns the engine's library state, made on first use.
func (e *toolHost) library() *libraryState {
	e.libMu.Lock()
	defer e.libMu.Unlock()
	if e.lib == nil {
		e.lib = &libraryState{}
	}
	return e.lib
}

// libraryNotes is what the session note must say for the library: each
// instruction file changed since the prompt was made. The first look takes
// the snapshot: for a new session the files as they are (its prompt was
// made a moment before), for a resumed one as its stored prompt shows them.
func (e *toolHost) libraryNotes() []string {
	l := e.library()
	l.mu.Lock()
	defer l.mu.Unlock()
	now := instructionStack(e.perm.root)
	if l.instrAt == nil {
		l.instrAt = instructionSnapshot(now)
		if len(e.sess.Messages) == 0 {
			return nil
		}
		// A session made in an earlier run: what its prompt showed of
		// each file is in the prompt itself. A file whose head and
		// opening are not there changed (or came) since; one that went
		// cannot be told from the prompt alone and is not noted.
		in := theLibrarySpec().Instructions
		for _, f := range now {
			head := fillPairs(in.FileHead, "file", f.Shown) + "\n"
			switch {
			case !strings.Contains(e.sess.System, head):
				delete(l.instrAt, f.Shown) // added
			case !strings.Contains(e.sess.System, head+cutUTF8(f.Text, 512)):
				l.instrAt[f.Shown] = "" // changed: no file's text is empty
			}
		}
	}
	notes := instructionChanges(l.instrAt, now)
	l.instrAt = instructionSnapshot(now)
	return notes
}

// libraryBlock is blocks/library.md filled for the CLI, whose own library
// has no knowledge bases to name.
func libraryBlock() string {
	s, err := fill(theSpec().Prompts["blocks/library.md"], map[string]string{"knowledge_scope": ""})
	if err != nil {
		panic("harness: prompts/blocks/library.md: " + err.Error())
	}
	return strings.TrimSpace(s)
}

// libHash is a stable short name for a path or text (index and memory
// file names).
func libHash(s string, n int) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])[:n]
}

// toolFacts fill the {{variables}} of the library's tools with the CLI's
// facts (harness README 1.2.0): LLeMbas sends the same tools with its own.
func init() {
	toolFacts["memory"] = func(tb *toolbox) map[string]string {
		return map[string]string{"where": "as files in lembas's state folder, outside the project"}
	}
	toolFacts["skills_list"] = func(tb *toolbox) map[string]string {
		return map[string]string{"where": "the project's " + strings.Join(theLibrarySpec().Skills.ProjectFolders, ", ") + " and your own " + filepath.ToSlash(filepath.Join("~/.config/lembas", theLibrarySpec().Skills.UserFolder))}
	}
	toolFacts["skill_view"] = func(tb *toolbox) map[string]string {
		return map[string]string{"supporting": "A skill's folder may hold supporting files (scripts, templates, references): they are listed with it, and file reads one."}
	}
	toolFacts["skill_manage"] = func(tb *toolbox) map[string]string {
		return map[string]string{"where": "A project skill is written to .agent/skills/<name>/SKILL.md, a user skill to ~/.config/lembas/skills/<name>/SKILL.md."}
	}
	toolFacts["session_search"] = func(tb *toolbox) map[string]string {
		return map[string]string{"sessions": "earlier sessions of this project"}
	}
	toolFacts["notes_search"] = func(tb *toolbox) map[string]string {
		return map[string]string{"notes": "your notes (this project's and the global ones)", "how": searchHow(loadConfigQuiet())}
	}
	toolFacts["knowledge_search"] = func(tb *toolbox) map[string]string {
		return map[string]string{"how": searchHow(loadConfigQuiet())}
	}
	toolFacts["note_manage"] = func(tb *toolbox) map[string]string {
		return map[string]string{"where": "files in lembas's state folder, outside the project"}
	}
}

// loadConfigQuiet is the config, or an empty one when it cannot be read
// (the session reports that itself).
func loadConfigQuiet() *config {
	cfg, err := loadConfig()
	if err != nil {
		return &config{}
	}
	return cfg
}

// searchHow says how the library searches, for a tool's description.
func searchHow(cfg *config) string {
	if ref := embeddingRef(cfg); ref != "" {
		return "by meaning and by words"
	}
	return "by words"
}

// hashText is the content hash the index and the snapshots compare.
func hashText(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}
