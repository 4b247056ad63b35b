package main

// The spec as data: everything under harness/ is embedded in the binary and
// read from here, so the texts and numbers a model or a person sees are
// edited in one place (harness/), never as Go literals. loadSpec parses it
// once per process; a broken harness is a build-time bug, caught by
// TestHarness, so at run time a parse failure is reported and fatal.
//
// The ground (floor 1): every floor reads it; it calls nothing above it.

import (
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
	"sync"
)

// The conformance cases (harness/conformance/*.json, half the harness's
// bytes) are tests, not something the binary reads: they stay out of it,
// and areas.txt, which names each (TestConformanceAreasListed), is what
// the announced version reads as their evidence (harness_version.go).
// TestHarnessEmbedded holds that every other harness file is embedded.
//
//go:embed harness/VERSION harness/*.json harness/*.md harness/models harness/permission harness/prompts harness/terminal harness/tools
//go:embed harness/conformance/README.md harness/conformance/areas.txt
var harnessEmbed embed.FS

// harnessFS is the embedded harness as the code reads it: the same files,
// noting which were read (harness_files.go), so a test can tell what start-up parsed.
var harnessFS = harnessFiles{harnessEmbed}

// toolSpec is one harness/tools/<name>.json.
type toolSpec struct {
	Name        string                     `json:"name"`
	Scope       string                     `json:"scope"`
	Sessions    string                     `json:"sessions"`
	Risk        string                     `json:"risk"`
	Block       string                     `json:"block"`
	Exclusive   bool                       `json:"exclusive"`
	Purpose     bool                       `json:"purpose"`
	Aliases     map[string][]string        `json:"aliases"`
	Actions     map[string]string          `json:"actions,omitempty"` // a folded tool: the former name → the action it runs (tools/README.md)
	Variables   map[string]string          `json:"variables"`
	Narrow      map[string]json.RawMessage `json:"narrow"`
	Requires    []string                   `json:"requires,omitempty"`
	Unavailable string                     `json:"unavailable,omitempty"`
	Confirm     string                     `json:"confirm,omitempty"`
	Offered     string                     `json:"offered,omitempty"`
	OfferedIf   []string                   `json:"offered_if,omitempty"` // conditions decided once per session (tools_offer.go)
	// PropertiesIf: optional properties sent only where their conditions
	// hold, as offered_if for a tool (tools_offer.go); a call may still
	// give them.
	PropertiesIf map[string][]string `json:"properties_if,omitempty"`
	Limits       map[string]float64  `json:"limits"`
	Texts        map[string]string   `json:"texts"`
	Description  string              `json:"description"`
	Parameters   json.RawMessage     `json:"parameters"`

	// closed: every object of the parameters takes only the properties it
	// names, as if it said additionalProperties: false — a harness tool's
	// rule (tools/README.md), so the schemas sent need not say it each time.
	closed bool
}

// limit returns a number from the tool's limits; a missing one is a harness
// bug that TestHarness catches, so it panics rather than guessing.
func (t *toolSpec) limit(name string) int {
	v, ok := t.Limits[name]
	if !ok {
		panic(fmt.Sprintf("harness: tools/%s.json has no limits.%s", t.Name, name))
	}
	return int(v)
}

// text fills one of the tool's texts.
func (t *toolSpec) text(key string, kv ...any) string {
	s, ok := t.Texts[key]
	if !ok {
		panic(fmt.Sprintf("harness: tools/%s.json has no texts.%s", t.Name, key))
	}
	return fillPairs(s, kv...)
}

type loopSpec struct {
	Steps struct {
		Backstop        int    `json:"backstop"`
		WrapupBefore    int    `json:"wrapup_before"`
		Wrapup          string `json:"wrapup"`
		BackstopReached string `json:"backstop_reached"`
	} `json:"steps"`
	Budgets map[string]struct {
		MaxSteps        int `json:"max_steps"`
		MaxOutputTokens int `json:"max_output_tokens"`
		// HeadlessGCHoldMiB: -p collects no garbage until the runtime
		// holds this many MiB (proc_gc.go); 0 collects as usual.
		HeadlessGCHoldMiB int `json:"headless_gc_hold_mib"`
	} `json:"budgets"`
	Parallel struct {
		ReadOnly bool `json:"read_only"`
		Max      int  `json:"max"`
	} `json:"parallel"`
	Nudges struct {
		EmptyReply    string `json:"empty_reply"`
		EmptyReplyMax int    `json:"empty_reply_max"`
	} `json:"nudges"`
	ToolErrors         map[string]string `json:"tool_errors"`
	Permission         map[string]string `json:"permission"`
	ModelErrors        map[string]string `json:"model_errors"`
	ContextLengthMatch []string          `json:"context_length_match"`
	Retry              struct {
		Attempts       int    `json:"attempts"`
		BaseMS         int    `json:"base_ms"`
		MaxMS          int    `json:"max_ms"`
		RetryAfterMaxS int    `json:"retry_after_max_s"`
		Notice         string `json:"notice"`
	} `json:"retry"`
	Timeouts struct {
		ConnectMS    int `json:"connect_ms"`
		FirstByteS   int `json:"first_byte_s"`
		IdleS        int `json:"idle_s"`
		QuietNoticeS int `json:"quiet_notice_s"`
		ProbeMS      int `json:"probe_ms"`
		KeepaliveS   int `json:"keepalive_s"` // how long an idle connection to a model server is kept
	} `json:"timeouts"`
	Context struct {
		ResultIDDigits int `json:"result_id_digits"`
		OutputCap      struct {
			Lines     int `json:"lines"`
			Chars     int `json:"chars"`
			HeadLines int `json:"head_lines"`
			TailLines int `json:"tail_lines"`
		} `json:"output_cap"`
		Elided      string            `json:"elided"`
		ElidedChars string            `json:"elided_chars"`
		ResultHead  string            `json:"result_head"`
		Hygiene     bool              `json:"hygiene"`
		HygieneEnv  string            `json:"hygiene_env"`
		ReadHead    string            `json:"read_head"`
		HashDigits  int               `json:"hash_digits"`
		DedupeTools []string          `json:"dedupe_tools"`
		Stubs       map[string]string `json:"stubs"`
		Note        map[string]string `json:"note"`
		Compaction  compactionSpec    `json:"compaction"`
	} `json:"context"`
	StopReasons []string `json:"stop_reasons"`
	Store       struct {
		PruneDays int `json:"prune_days"`
	} `json:"store"`
	Jobs      jobsSpec        `json:"jobs"`      // jobs.go
	Subagents subagentsSpec   `json:"subagents"` // subagents.go
	Progress  progressSpec    `json:"progress"`  // progress.go
	Scheduled json.RawMessage `json:"scheduled"` // link_scheduled.go reads it
	Team      teamSpec        `json:"team"`      // team.go (harness_team.go)
}

// compactionSpec is loop.json's context.compaction: when a session is
// compacted (a share of the model's context window, by the window's size)
// and the texts of the summary turn.
type compactionSpec struct {
	Table []struct {
		Context int     `json:"context"`
		At      float64 `json:"at"`
	} `json:"table"`
	CharsPerToken int    `json:"chars_per_token"`
	Ask           string `json:"ask"`
	Summary       string `json:"summary"`
	ReadsHead     string `json:"reads_head"`
	ReadsRow      string `json:"reads_row"`
	Continue      string `json:"continue"`
	Empty         string `json:"empty"`
	Notice        string `json:"notice"`
}

type modesSpec struct {
	About   string                       `json:"about"`
	Modes   map[string]map[string]string `json:"modes"`
	Aliases map[string]string            `json:"aliases"`
	Order   []string                     `json:"order"`
	Default string                       `json:"default"`
	Wider   map[string]string            `json:"wider"`
	Texts   map[string]string            `json:"texts"`
}

// modelMeta is the metadata of one model (models/schema.json).
type modelMeta struct {
	Match          string   `json:"match,omitempty"`
	Context        int      `json:"context,omitempty"`
	Output         int      `json:"output,omitempty"`
	Efforts        []string `json:"efforts,omitempty"`
	ThinkingSwitch *bool    `json:"thinking_switch,omitempty"`
	Vision         *bool    `json:"vision,omitempty"`
	Patch          *bool    `json:"patch,omitempty"` // the model edits by patch: apply_patch is offered (tools_offer.go model_patches)
	Tools          *bool    `json:"tools,omitempty"`
	Parallel       int      `json:"parallel,omitempty"`
	Notes          string   `json:"notes,omitempty"` // what a person should know of it (lembas models shows it)
}

type modelsSpec struct {
	About    string            `json:"about"`
	Fields   map[string]string `json:"fields"`
	Defaults modelMeta         `json:"defaults"`
	Known    []modelMeta       `json:"known"`
	Levels   map[string]any    `json:"levels"`
	Capacity struct {
		About string            `json:"about"`
		Texts map[string]string `json:"texts"`
	} `json:"capacity"`
	Texts map[string]string `json:"texts"`
}

type promptIndex struct {
	About string `json:"about"`
	Texts map[string]struct {
		Shared    bool              `json:"shared"`
		Variables map[string]string `json:"variables"`
	} `json:"texts"`
}

type purposeSpec struct {
	Name     string          `json:"name"`
	About    string          `json:"about"`
	MaxChars int             `json:"max_chars"` // what a card shows of it at most
	Schema   json.RawMessage `json:"schema"`
}

// spec is the whole harness, parsed.
type spec struct {
	Version   string
	Tools     map[string]*toolSpec
	ToolNames []string // sorted
	Loop      loopSpec
	Modes     modesSpec
	Models    modelsSpec
	Prompts   map[string]string // path under prompts/ → text
	Index     promptIndex
	Purpose   purposeSpec
	Commands  commandsSpec // commands.json: /commands and @path attachments (expand.go)
	// repl.json and themes.json are the REPL's: theReplSpec and theThemes
	// parse them on first use, so -p and the service never do.
}

var (
	specOnce sync.Once
	specVal  *spec
	specErr  error
)

// theSpec returns the parsed harness, parsing it on first use.
func theSpec() *spec {
	specOnce.Do(func() { specVal, specErr = loadSpec(harnessFS) })
	if specErr != nil {
		panic("harness: " + specErr.Error())
	}
	return specVal
}

// decodeStrict decodes one harness JSON file, refusing unknown fields so a
// typo in the spec is an error rather than a silently ignored setting
// (harness_decode.go).
func decodeStrict(fsys fs.FS, name string, v any) error {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return err
	}
	return decodeHarnessFile(name, data, v, true)
}

func loadSpec(fsys fs.FS) (*spec, error) {
	s := &spec{Tools: map[string]*toolSpec{}, Prompts: map[string]string{}}
	v, err := fs.ReadFile(fsys, "harness/VERSION")
	if err != nil {
		return nil, err
	}
	s.Version = strings.TrimSpace(string(v))
	names, _ := fs.Glob(fsys, "harness/tools/*.json")
	for _, n := range names {
		if strings.Count(path.Base(n), ".") > 1 { // tools/<name>.<part>.json are fragments
			continue
		}
		t := &toolSpec{}
		if err := decodeStrict(fsys, n, t); err != nil {
			return nil, err
		}
		if want := strings.TrimSuffix(path.Base(n), ".json"); t.Name != want {
			return nil, errorf("%s: name %q, want %q", n, t.Name, want)
		}
		t.closed = true
		s.Tools[t.Name] = t
		s.ToolNames = append(s.ToolNames, t.Name)
	}
	sort.Strings(s.ToolNames)
	for _, f := range []struct {
		name string
		v    any
	}{
		{"harness/loop.json", &s.Loop},
		{"harness/permission/modes.json", &s.Modes},
		{"harness/models/schema.json", &s.Models},
		{"harness/prompts/index.json", &s.Index},
		{"harness/purpose.json", &s.Purpose},
		{"harness/commands.json", &s.Commands},
	} {
		if err := decodeStrict(fsys, f.name, f.v); err != nil {
			return nil, err
		}
	}
	err = fs.WalkDir(fsys, "harness/prompts", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".md") {
			return err
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		s.Prompts[strings.TrimPrefix(p, "harness/prompts/")] = string(b)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// loopText fills a text from one of loop.json's text tables.
//
//go:noinline
func loopText(table map[string]string, key string, kv ...any) string {
	s, ok := table[key]
	if !ok {
		panic("harness: loop.json has no text " + key)
	}
	return fillPairs(s, kv...)
}

var reVar = lazyRE(`\{\{([a-zA-Z0-9_]+)\}\}`)

// fillPairs fills {{name}} placeholders from alternating name, value
// arguments. It is for short texts the code composes; prompt texts and tool
// descriptions go through fill, which also checks nothing is left unfilled.
// plural picks a word's form for a count: "1 line", "2 lines".
func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// fillLine writes fillPairs(tmpl, kv...) and a newline to b: one call
// where a report writes line after line (not inlined, so each line costs a
// call rather than a copy of the concatenation).
//
//go:noinline
func fillLine(b *strings.Builder, tmpl string, kv ...any) {
	b.WriteString(fillPairs(tmpl, kv...))
	b.WriteByte('\n')
}

func fillPairs(s string, kv ...any) string {
	if len(kv) == 0 {
		return s
	}
	// By hand, not by reVar: it runs for every text a tool result says.
	var b strings.Builder
	for {
		i := strings.Index(s, "{{")
		if i < 0 {
			break
		}
		j := i + 2
		for j < len(s) && isVarByte(s[j]) {
			j++
		}
		if j == i+2 || !strings.HasPrefix(s[j:], "}}") {
			b.WriteString(s[:i+1]) // "{{{x}}" holds one a brace on
			s = s[i+1:]
			continue
		}
		name, v, found := s[i+2:j], "", false
		for k := 0; k+1 < len(kv); k += 2 {
			if fmt.Sprint(kv[k]) == name {
				v, found = fmt.Sprint(kv[k+1]), true // the last given wins
			}
		}
		b.WriteString(s[:i])
		if found {
			b.WriteString(v)
		} else {
			b.WriteString(s[i : j+2])
		}
		s = s[j+2:]
	}
	if b.Len() == 0 {
		return s
	}
	b.WriteString(s)
	return b.String()
}

func isVarByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// fill fills a prompt text or description by the spec's rules: every
// {{name}} is replaced by vars[name]; a line that is nothing but a bullet and
// one variable ("- {{name}}") disappears when that variable is empty; a
// variable without a value is an error, since none may reach a model
// unfilled.
func fill(text string, vars map[string]string) (string, error) {
	var missing []string
	lines := strings.SplitAfter(text, "\n")
	var b strings.Builder
	for _, line := range lines {
		trim := strings.TrimSpace(line)
		if m := reVar.FindStringSubmatch(trim); m != nil && (trim == "- "+m[0] || trim == "* "+m[0]) {
			v, ok := vars[m[1]]
			if !ok {
				missing = append(missing, m[1])
			}
			if v == "" {
				continue
			}
		}
		b.WriteString(reVar.ReplaceAllStringFunc(line, func(m string) string {
			name := m[2 : len(m)-2]
			v, ok := vars[name]
			if !ok {
				missing = append(missing, name)
				return m
			}
			return v
		}))
	}
	if len(missing) > 0 {
		return "", errorf("unfilled variable(s) %s", strings.Join(uniq(missing), ", "))
	}
	return b.String(), nil
}

//go:noinline
func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// narrowSpec is what a project offers of a shared tool's parameters where
// it offers less: properties dropped, enums kept to some values.
type narrowSpec struct {
	Drop []string            `json:"drop"`
	Enum map[string][]string `json:"enum"`
}

// narrowSchema applies a narrow to a parameters schema. It only ever takes
// away — an optional property, or enum values — so a call valid for the
// narrow tool is valid for the whole one; asking for anything else is an
// error. Paths: "a.b" is b inside object a, "a[].b" is b inside a's items.
func narrowSchema(params json.RawMessage, n narrowSpec) (json.RawMessage, error) {
	var root map[string]any
	if err := json.Unmarshal(params, &root); err != nil {
		return nil, err
	}
	for _, p := range n.Drop {
		parent, name, err := schemaParent(root, p)
		if err != nil {
			return nil, err
		}
		props, _ := parent["properties"].(map[string]any)
		if _, ok := props[name]; !ok {
			return nil, errorf("narrow: drop %s: no such property", p)
		}
		if req, ok := parent["required"].([]any); ok {
			for _, r := range req {
				if r == name {
					return nil, errorf("narrow: drop %s: a required property cannot be dropped", p)
				}
			}
		}
		delete(props, name)
	}
	keys := make([]string, 0, len(n.Enum))
	for k := range n.Enum {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, p := range keys {
		keep := n.Enum[p]
		parent, name, err := schemaParent(root, p)
		if err != nil {
			return nil, err
		}
		props, _ := parent["properties"].(map[string]any)
		prop, ok := props[name].(map[string]any)
		if !ok {
			return nil, errorf("narrow: enum %s: no such property", p)
		}
		have, ok := prop["enum"].([]any)
		if !ok {
			return nil, errorf("narrow: enum %s: the property has no enum to narrow", p)
		}
		var kept []any
		for _, k := range keep {
			found := false
			for _, h := range have {
				if h == k {
					found = true
				}
			}
			if !found {
				return nil, errorf("narrow: enum %s: %q is not one of the property's values", p, k)
			}
			kept = append(kept, k)
		}
		if len(kept) == 0 {
			return nil, errorf("narrow: enum %s: at least one value must be kept", p)
		}
		prop["enum"] = kept
	}
	return json.Marshal(root)
}

// schemaParent finds the object schema holding the last step of a path.
func schemaParent(root map[string]any, p string) (map[string]any, string, error) {
	steps := strings.Split(p, ".")
	cur := root
	for _, s := range steps[:len(steps)-1] {
		items := strings.HasSuffix(s, "[]")
		s = strings.TrimSuffix(s, "[]")
		props, _ := cur["properties"].(map[string]any)
		next, ok := props[s].(map[string]any)
		if !ok {
			return nil, "", errorf("narrow: %s: no property %s", p, s)
		}
		if items {
			if next, ok = next["items"].(map[string]any); !ok {
				return nil, "", errorf("narrow: %s: %s has no items", p, s)
			}
		}
		cur = next
	}
	return cur, steps[len(steps)-1], nil
}

// commandsSpec is harness/commands.json.
type commandsSpec struct {
	About         string                    `json:"about"`
	BuiltinOrder  []string                  `json:"builtin_order"`
	Builtin       map[string]builtinCommand `json:"builtin"`
	TerminalOrder []string                  `json:"terminal_order"`
	Terminal      map[string]string         `json:"terminal"`
	Attach        struct {
		MaxFileBytes   int               `json:"max_file_bytes"`
		MaxLines       int               `json:"max_lines"`
		MaxDirEntries  int               `json:"max_dir_entries"`
		MaxAttachments int               `json:"max_attachments"`
		MaxImageBytes  int               `json:"max_image_bytes"`
		Texts          map[string]string `json:"texts"`
	} `json:"attach"`
}

// builtinCommand is one of the shared built-in commands.
type builtinCommand struct {
	Description string `json:"description"`
	Hint        string `json:"hint,omitempty"`
	Action      string `json:"action,omitempty"` // always, without_task
	Mode        string `json:"mode,omitempty"`
}

// replSpec is harness/repl.json.
type replSpec struct {
	About   string `json:"about"`
	Numbers struct {
		FoldLines        int `json:"fold_lines"`
		DoubleCtrlCMS    int `json:"double_ctrl_c_ms"`
		HistoryMax       int `json:"history_max"`
		ResumeTurns      int `json:"resume_turns"`
		ProgressQuietS   int `json:"progress_quiet_s"`
		CardDiscardMS    int `json:"card_discard_ms"`
		SnapshotMaxBytes int `json:"snapshot_max_bytes"`
		ToolLineChars    int `json:"tool_line_chars"`
	} `json:"numbers"`
	Texts map[string]string `json:"texts"`
}

// theReplSpec parses harness/repl.json on first use. It is the REPL's
// (and undo's snapshot limit), so it is not in loadSpec: -p and the
// service reach their first request without it (harness/conformance/
// startup.json). A broken file is a build-time bug TestHarness catches,
// so at run time it panics like theSpec.
//
//go:noinline
func theReplSpec() *replSpec { return replSpecFile.get() }

var replSpecFile = &harnessFile[replSpec]{name: "harness/repl.json"}

// theThemes parses harness/themes.json on first use, for the same reason.
//
//go:noinline
func theThemes() *themesSpec { return themesFile.get() }

var themesFile = &harnessFile[themesSpec]{name: "harness/themes.json"}

// themesSpec is harness/themes.json: role → SGR parameters, per theme.
type themesSpec struct {
	About   string                       `json:"about"`
	Default string                       `json:"default"`
	Order   []string                     `json:"order"`
	Themes  map[string]map[string]string `json:"themes"`
}

// jobsSpec is loop.json's jobs.
type jobsSpec struct {
	About           string            `json:"about"`
	MaxPerSession   int               `json:"max_per_session"`
	MaxRunning      int               `json:"max_running"`
	OutputKeepBytes int               `json:"output_keep_bytes"`
	StopGraceMS     int               `json:"stop_grace_ms"`
	Marks           map[string]string `json:"marks"`
	Texts           map[string]string `json:"texts"`
}

// progressSpec is loop.json's progress.
type progressSpec struct {
	About        string            `json:"about"`
	Line         string            `json:"line"`
	LoadingMatch []string          `json:"loading_match"`
	Phases       map[string]string `json:"phases"`
}

// subagentsSpec is loop.json's subagents.
type subagentsSpec struct {
	About           string            `json:"about"`
	MaxDepth        int               `json:"max_depth"`
	MaxRunning      int               `json:"max_running"`
	MaxSteps        int               `json:"max_steps"`
	MaxTokens       int               `json:"max_tokens"`
	Agents          []string          `json:"agents"`
	ReadOnlyAgents  []string          `json:"read_only_agents"`
	OneModelServers []string          `json:"one_model_servers"`
	Strictness      []string          `json:"strictness"`
	Refusals        map[string]string `json:"refusals"`
	Texts           map[string]string `json:"texts"`
	AboutAgents     map[string]string `json:"about_agents"`
	Setting         subagentSetting   `json:"setting"` // harness_team.go
}
