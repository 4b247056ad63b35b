package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// systemOf is the system message a request carried.
func systemOf(t *testing.T, r fakeRequest) string {
	t.Helper()
	ms := r.messages()
	if len(ms) == 0 || ms[0]["role"] != "system" {
		t.Fatalf("no system message in %s", r.Raw)
	}
	return ms[0]["content"].(string)
}

// userWithNote is the last user message a request carried, its session
// note included.
func userWithNote(r fakeRequest) string {
	ms := r.messages()
	for i := len(ms) - 1; i >= 0; i-- {
		if ms[i]["role"] == "user" {
			s, _ := ms[i]["content"].(string)
			return s
		}
	}
	return ""
}

// TestLibraryFirstRequest runs lembas -p against the fake model in a
// project inside a git repository: the first request's system prompt holds
// the global, the repository's and the project's instruction files in
// that order, the skills' names and descriptions (not their bodies), the
// memory records; and, headless with no note, no library block.
func TestLibraryFirstRequest(t *testing.T) {
	cfg, st := libEnv(t, nil)
	fm := newFakeModel(t)
	fm.push(textReply("ok"))
	repo := t.TempDir()
	os.MkdirAll(filepath.Join(repo, ".git"), 0o755)
	proj := filepath.Join(repo, "svc")
	writeTestFile(t, filepath.Join(repo, "AGENTS.md"), "REPO-RULE: run make check.\n")
	writeTestFile(t, filepath.Join(proj, "CLAUDE.md"), "PROJECT-RULE: tabs.\n@docs/more.md\n")
	writeTestFile(t, filepath.Join(proj, "docs", "more.md"), "IMPORTED-RULE\n")
	writeTestFile(t, filepath.Join(cfg, "lembas", "AGENTS.md"), "GLOBAL-RULE\n")
	writeTestFile(t, filepath.Join(proj, ".agent", "skills", "release", "SKILL.md"), "---\nname: release\ndescription: cut a release tag\n---\nSKILL-BODY-SECRET steps\n")
	writeTestFile(t, filepath.Join(cfg, "lembas", "skills", "Bad_Name", "SKILL.md"), "---\nname: Bad_Name\ndescription: x\n---\nbody\n")
	p, _ := filepath.EvalSymlinks(proj)
	if _, err := (&localMemory{dir: filepath.Join(st, "lembas", "memory"), root: p}).load("project"); err != nil {
		t.Fatal(err)
	}
	mem := &localMemory{dir: filepath.Join(st, "lembas", "memory"), root: p}
	mem.apply(func(r map[string][]memRecord) (map[string][]memRecord, error) {
		r["project"] = []memRecord{{Text: "MEMORY-RECORD: the db is sqlite"}}
		return r, nil
	})
	env := []string{"OPENAI_BASE_URL=" + fm.url(), "LEMBAS_MODEL=mock", "XDG_CONFIG_HOME=" + cfg, "XDG_STATE_HOME=" + st}
	r := runLembas(t, env, proj, "", "-p", "hello")
	if r.code != 0 || len(fm.got()) != 1 {
		t.Fatalf("exit %d, %d requests\n%s", r.code, len(fm.got()), r.stderr)
	}
	sys := systemOf(t, fm.got()[0])
	order := []string{"GLOBAL-RULE", "REPO-RULE", "PROJECT-RULE", "IMPORTED-RULE", "- release: cut a release tag", "MEMORY-RECORD"}
	last := -1
	for _, w := range order {
		i := strings.Index(sys, w)
		if i < 0 || i < last {
			t.Fatalf("%q missing or out of order in\n%s", w, sys)
		}
		last = i
	}
	for _, bad := range []string{"SKILL-BODY-SECRET", "Bad_Name", repo} {
		if strings.Contains(sys, bad) {
			t.Errorf("the system prompt holds %q:\n%s", bad, sys)
		}
	}
	var names []string
	for _, raw := range fm.got()[0].Body.Tools {
		var d struct{ Function struct{ Name string } }
		json.Unmarshal(raw, &d)
		names = append(names, d.Function.Name)
	}
	// The rule (tools_offer.go): the skill tools because a skill exists,
	// memory because it holds a record; no note (and nobody to ask for
	// one in a headless run), no knowledge source, no earlier session, so
	// not theirs, and no library block naming them.
	offered := " " + strings.Join(names, " ") + " "
	for _, want := range []string{"memory", "skills_list", "skill_view", "skill_manage"} {
		if !strings.Contains(offered, " "+want+" ") {
			t.Errorf("tool %s not offered: %v", want, names)
		}
	}
	for _, not := range []string{"session_search", "notes_search", "note_view", "note_manage", "knowledge_search", "knowledge_get", "ask_user", "plan_submit"} {
		if strings.Contains(offered, " "+not+" ") {
			t.Errorf("tool %s offered though this session cannot use it: %v", not, names)
		}
	}
	if strings.Contains(sys, "knowledge_search") || strings.Contains(sys, "session_search") || strings.Contains(sys, "Your library") {
		t.Errorf("the library block names tools not offered:\n%s", sys)
	}
	// A second session of the project has an earlier one to search.
	fm.push(textReply("ok"))
	if r := runLembas(t, env, proj, "", "-p", "again"); r.code != 0 || len(fm.got()) != 2 {
		t.Fatalf("second run: exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(string(fm.got()[1].Raw), `"name":"session_search"`) {
		t.Errorf("session_search not offered with an earlier session of the project")
	}
}

// TestLibraryInstructionChangeIsANote: a file changed during a session
// does not change the system prompt (the prefix stays still); the model
// hears of it in a session note on the next prompt, once.
func TestLibraryInstructionChangeIsANote(t *testing.T) {
	libEnv(t, nil)
	f := newFakeModel(t)
	f.push(textReply("one"), textReply("two"), textReply("three"))
	e, _ := newTestEngine(t, f, "manual", map[string]string{"AGENTS.md": "Use tabs.\n"})
	if !strings.Contains(e.sess.System, "Use tabs.") {
		t.Fatalf("no instructions in the prompt:\n%s", e.sess.System)
	}
	e.runTurn(context.Background(), "first")
	writeTestFile(t, filepath.Join(e.perm.root, "AGENTS.md"), "Use spaces now.\n")
	writeTestFile(t, filepath.Join(e.perm.root, "sub", "AGENTS.md"), "not in the stack: below the project\n")
	e.runTurn(context.Background(), "second")
	e.runTurn(context.Background(), "third")
	got := f.got()
	if len(got) != 3 {
		t.Fatalf("%d requests", len(got))
	}
	s0, s1 := systemOf(t, got[0]), systemOf(t, got[1])
	if s0 != s1 || !strings.Contains(s1, "Use tabs.") {
		t.Errorf("the system prompt changed mid-session")
	}
	if u := userWithNote(got[0]); strings.Contains(u, "changed since") {
		t.Errorf("first prompt noted a change: %q", u)
	}
	u := userWithNote(got[1])
	if !strings.Contains(u, "<session-note>") || !strings.Contains(u, "AGENTS.md changed since this session began") || !strings.Contains(u, "Use spaces now.") {
		t.Errorf("second prompt: %q", u)
	}
	if u := userWithNote(got[2]); strings.Contains(u, "changed since") {
		t.Errorf("the change was noted twice: %q", u)
	}
}

// TestLibrarySkillAsSlashCommand types /release in the REPL: the model
// gets the skill's body with what followed the name.
func TestLibrarySkillAsSlashCommand(t *testing.T) {
	cfg, st := libEnv(t, nil)
	fm := newFakeModel(t)
	fm.push(textReply("done"))
	proj := copyProject(t, "basic")
	writeTestFile(t, filepath.Join(proj, ".agents", "skills", "release", "SKILL.md"), "---\nname: release\ndescription: cut a release\n---\nTag the commit, then push the tag.\n")
	env := []string{"OPENAI_BASE_URL=" + fm.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + st, "XDG_CONFIG_HOME=" + cfg}
	runLembas(t, env, proj, "", "trust") // piped input is never the trust answer
	r := runLembas(t, env, proj, "/release v1.2\n/quit\n", "-i")
	if r.code != 0 || len(fm.got()) != 1 {
		t.Fatalf("exit %d, %d requests\n%s\n%s", r.code, len(fm.got()), r.stdout, r.stderr)
	}
	u := userWithNote(fm.got()[0])
	if !strings.Contains(u, "The person ran the skill release") || !strings.Contains(u, "Tag the commit, then push the tag.") || !strings.Contains(u, "v1.2") {
		t.Errorf("the prompt sent: %q", u)
	}
}

// TestLibrarySkills: discovery order and the name rule, trust, the
// prompt's cap, the slash command's expansion, ACP's command list, and
// skill_manage and skill_view through the engine.
func TestLibrarySkills(t *testing.T) {
	cfg, _ := libEnv(t, nil)
	f := newFakeModel(t)
	e, _ := newTestEngine(t, f, "edit", map[string]string{
		".agent/skills/deploy/SKILL.md":       "---\nname: deploy\ndescription: project deploy\n---\nproject body\n",
		".claude/skills/deploy/SKILL.md":      "---\nname: deploy\ndescription: shadowed\n---\nx\n",
		".claude/skills/lint/SKILL.md":        "---\ndescription: 'lint it'\n---\nlint body\n",
		".claude/skills/lint/scripts/run.sh":  "echo lint\n",
		".agents/skills/no-desc/SKILL.md":     "---\nname: no-desc\n---\nbody\n",
		".agents/skills/UPPER/SKILL.md":       "---\nname: UPPER\ndescription: bad name\n---\nbody\n",
		".agents/skills/toolong/SKILL.md":     "---\nname: " + strings.Repeat("a", 65) + "\ndescription: too long a name\n---\n",
		".agents/skills/plan/SKILL.md":        "---\nname: plan\ndescription: named like a built-in\n---\nbody\n",
		".agents/skills/not-a-dir-skill.md":   "stray file",
		".agents/skills/windows/SKILL.md":     "---\r\nname: windows\r\ndescription: crlf file\r\n---\r\nbody\r\n",
		".agents/skills/a-b-c-123/SKILL.md":   "---\nname: a-b-c-123\ndescription: digits and hyphens\n---\n",
		".agents/skills/9lives/SKILL.md":      "---\nname: 9lives\ndescription: starts with a digit\n---\n",
		".agents/skills/-dash/SKILL.md":       "---\nname: -dash\ndescription: starts with a hyphen\n---\n",
		".agents/skills/has space/SKILL.md":   "---\nname: has space\ndescription: space\n---\n",
		".agents/skills/emptyname/SKILL.md":   "---\nname: \ndescription: the folder names it\n---\n",
		".agents/skills/quoted/SKILL.md":      "---\nname: \"quoted\"\ndescription: \"a quoted one\"\n---\n",
		".agents/skills/nofront/SKILL.md":     "no front matter at all\n",
		".agents/skills/unclosed/SKILL.md":    "---\nname: unclosed\ndescription: never closed\n",
		".agents/skills/dupe-user/SKILL.md":   "---\nname: dupe-user\ndescription: project wins\n---\n",
		".agents/skills/third/SKILL.md":       "---\nname: third\ndescription: third folder\n---\n",
		".agents/skills/deploy-docs/SKILL.md": "---\nname: deploy-docs\ndescription: docs\n---\n",
	})
	writeTestFile(t, filepath.Join(cfg, "lembas", "skills", "dupe-user", "SKILL.md"), "---\nname: dupe-user\ndescription: user loses\n---\n")
	writeTestFile(t, filepath.Join(cfg, "lembas", "skills", "mine", "SKILL.md"), "---\nname: mine\ndescription: the person's own\n---\nmine body\n")
	root := e.perm.root
	var got []string
	for _, sk := range discoverSkills(root, true) {
		got = append(got, sk.Name+"="+sk.Description+"@"+sk.Where)
	}
	want := "9lives=starts with a digit@project a-b-c-123=digits and hyphens@project deploy=project deploy@project deploy-docs=docs@project dupe-user=project wins@project emptyname=the folder names it@project lint=lint it@project mine=the person's own@user plan=named like a built-in@project quoted=a quoted one@project third=third folder@project windows=crlf file@project"
	if strings.Join(got, " ") != want {
		t.Errorf("skills\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	// An untrusted project's skills are not seen; the person's are.
	setTrust(root, false)
	if all := discoverSkills(root, folderTrusted(root, root)); len(all) != 2 || all[0].Name != "dupe-user" || all[1].Name != "mine" {
		t.Errorf("untrusted: %+v", all)
	}
	if r := runLibTool(t, e, "skill_manage", map[string]any{"action": "create", "name": "new-one", "description": "d", "body": "b"}); !r.IsError || !strings.Contains(r.Text, "not trusted") {
		t.Errorf("wrote into an untrusted project: %+v", r)
	}
	if _, err := os.Stat(filepath.Join(root, ".agent", "skills", "new-one")); err == nil {
		t.Error("the skill folder was made")
	}
	setTrust(root, true)
	// The slash command: /plan stays the built-in; /lint is the skill.
	opts := defaultExpandOptions(root, false, true)
	exp, err := expandWith(opts, "/lint the src folder")
	if err != nil || exp.Kind != "skill" || !strings.Contains(exp.Text, "lint body") || !strings.HasSuffix(exp.Text, "the src folder") {
		t.Errorf("/lint: %+v %v", exp, err)
	}
	if exp, _ := expandWith(opts, "/plan x"); exp.Kind != "builtin" {
		t.Errorf("/plan became %q", exp.Kind)
	}
	if exp, _ := expandWith(opts, "/nosuch x"); exp.Kind != "" || exp.Text != "/nosuch x" {
		t.Errorf("/nosuch: %+v", exp)
	}
	// ACP lists skills with kind skill.
	kinds := map[string]string{}
	for _, c := range availableCommands(root) {
		kinds[c["name"].(string)] = c["_meta"].(map[string]any)["lembas"].(map[string]string)["kind"]
	}
	if kinds["lint"] != "skill" || kinds["mine"] != "skill" || kinds["plan"] != "builtin" {
		t.Errorf("ACP commands: %v", kinds)
	}
	// skills_list and skill_view.
	if r := runLibTool(t, e, "skills_list", map[string]any{}); !strings.Contains(r.Text, "- lint (project): lint it") || !strings.Contains(r.Text, "- mine (user)") {
		t.Errorf("skills_list: %s", r.Text)
	}
	r := runLibTool(t, e, "skill_view", map[string]any{"name": "lint"})
	if r.IsError || !strings.Contains(r.Text, "lint body") || !strings.Contains(r.Text, "scripts/run.sh") || strings.Contains(r.Text, root) {
		t.Errorf("skill_view: %s", r.Text)
	}
	if r := runLibTool(t, e, "skill_view", map[string]any{"name": "lint", "file": "scripts/run.sh"}); r.IsError || !strings.Contains(r.Text, "echo lint") {
		t.Errorf("skill_view file: %s", r.Text)
	}
	if r := runLibTool(t, e, "skill_view", map[string]any{"name": "lint", "file": "../../../AGENTS.md"}); !r.IsError {
		t.Errorf("skill_view read outside its folder: %s", r.Text)
	}
	// skill_manage: create, edit (old/new), write_file, delete; bad names.
	if r := runLibTool(t, e, "skill_manage", map[string]any{"action": "create", "name": "Bad Name", "description": "d", "body": "b"}); !r.IsError || !strings.Contains(r.Text, "not a skill name") {
		t.Errorf("bad name: %s", r.Text)
	}
	if r := runLibTool(t, e, "skill_manage", map[string]any{"action": "create", "name": "run-tests", "description": "run the tests", "body": "Run go test."}); r.IsError {
		t.Fatalf("create: %s", r.Text)
	}
	if sk, ok := findSkill(root, true, "run-tests"); !ok || sk.Body != "Run go test." || sk.Where != "project" || !strings.HasPrefix(sk.Path, filepath.Join(root, ".agent", "skills")) {
		t.Errorf("created: %+v %v", sk, ok)
	}
	if r := runLibTool(t, e, "skill_manage", map[string]any{"action": "edit", "name": "run-tests", "old": "go test", "new": "go test -race"}); r.IsError {
		t.Errorf("edit: %s", r.Text)
	}
	if sk, _ := findSkill(root, true, "run-tests"); sk.Body != "Run go test -race." || sk.Description != "run the tests" {
		t.Errorf("edited: %+v", sk)
	}
	if r := runLibTool(t, e, "skill_manage", map[string]any{"action": "write_file", "name": "run-tests", "file": "../escape.txt", "content": "x"}); !r.IsError {
		t.Errorf("write_file escaped: %s", r.Text)
	}
	if r := runLibTool(t, e, "skill_manage", map[string]any{"action": "write_file", "name": "run-tests", "file": "ref/notes.md", "content": "x"}); r.IsError {
		t.Errorf("write_file: %s", r.Text)
	}
	if r := runLibTool(t, e, "skill_manage", map[string]any{"action": "create", "name": "mine2", "description": "d", "body": "b", "place": "user"}); r.IsError {
		t.Errorf("user create: %s", r.Text)
	}
	if _, err := os.Stat(filepath.Join(cfg, "lembas", "skills", "mine2", "SKILL.md")); err != nil {
		t.Errorf("user skill: %v", err)
	}
	if r := runLibTool(t, e, "skill_manage", map[string]any{"action": "delete", "name": "run-tests"}); r.IsError {
		t.Errorf("delete: %s", r.Text)
	}
	if _, ok := findSkill(root, true, "run-tests"); ok {
		t.Error("still there after delete")
	}
}

// TestLibrarySkillsPromptCap: many skills stop before the cap with a line
// saying how many more there are.
func TestLibrarySkillsPromptCap(t *testing.T) {
	cfg, _ := libEnv(t, nil)
	root, _ := filepath.EvalSymlinks(t.TempDir())
	n := 400
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("skill-%03d", i)
		writeTestFile(t, filepath.Join(cfg, "lembas", "skills", name, "SKILL.md"), "---\nname: "+name+"\ndescription: "+strings.Repeat("word ", 8)+"\n---\n")
	}
	p := skillsPrompt(root)
	max := theLibrarySpec().Skills.PromptMaxBytes
	if len(p) > max+100 || !strings.Contains(p, "more: skills_list shows them all") {
		t.Fatalf("%d bytes (cap %d):\n%s", len(p), max, p[len(p)-200:])
	}
	shown := strings.Count(p, "\n- skill-")
	if !strings.Contains(p, fmt.Sprintf("and %d more", n-shown)) {
		t.Errorf("%d shown, the cut line says %q", shown, p[strings.LastIndex(p, "\n"):])
	}
}

// TestLibraryReplMemory: /memory lists the records, /memory rm removes
// one, and the model hears of it in the next prompt's session note; /help
// lists the skills.
func TestLibraryReplMemory(t *testing.T) {
	cfg, st := libEnv(t, nil)
	fm := newFakeModel(t)
	fm.push(textReply("noted"))
	proj := copyProject(t, "basic")
	writeTestFile(t, filepath.Join(cfg, "lembas", "skills", "triage", "SKILL.md"), "---\nname: triage\ndescription: sort the open issues\n---\nbody\n")
	t.Setenv("XDG_STATE_HOME", st)
	p, _ := filepath.EvalSymlinks(proj)
	tool := theSpec().Tools["memory"]
	memoryFor(p).apply(func(r map[string][]memRecord) (map[string][]memRecord, error) {
		return applyMemory(tool, r, []memChange{{Action: "add", Target: "user", Text: "SEEDED-RECORD"}}, memLimits(tool), time.Now())
	})
	env := []string{"OPENAI_BASE_URL=" + fm.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + st, "XDG_CONFIG_HOME=" + cfg}
	runLembas(t, env, proj, "", "trust") // piped input is never the trust answer
	r := runLembas(t, env, proj, "/memory\n/memory rm user 1\n/help\nhello\n/quit\n", "-i")
	if r.code != 0 || len(fm.got()) != 1 {
		t.Fatalf("exit %d, %d requests\n%s\n%s", r.code, len(fm.got()), r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "1. SEEDED-RECORD") || !strings.Contains(r.stdout, "removed record 1 of the user memory") {
		t.Errorf("output:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "Skills (each a command):") || !strings.Contains(r.stdout, "sort the open issues") {
		t.Errorf("/help does not list the skill:\n%s", r.stdout)
	}
	if u := userWithNote(fm.got()[0]); !strings.Contains(u, "The person removed a user memory record: SEEDED-RECORD") {
		t.Errorf("the prompt: %q", u)
	}
	if recs, _ := memoryFor(p).load("user"); len(recs) != 0 {
		t.Errorf("still there: %+v", recs)
	}
}

// TestLibraryInstructionChangeBetweenRuns: a session resumed in a new
// process (a fresh engine state) notes a file that changed since its
// prompt was made, and says nothing when none did.
func TestLibraryInstructionChangeBetweenRuns(t *testing.T) {
	libEnv(t, nil)
	f := newFakeModel(t)
	f.push(textReply("one"), textReply("two"), textReply("three"))
	e, _ := newTestEngine(t, f, "manual", map[string]string{"AGENTS.md": "Use tabs.\n"})
	e.runTurn(context.Background(), "first")
	e.lib = nil // the next run of the same session
	e.runTurn(context.Background(), "second")
	if u := userWithNote(f.got()[1]); strings.Contains(u, "changed since") {
		t.Errorf("unchanged file noted: %q", u)
	}
	writeTestFile(t, filepath.Join(e.perm.root, "AGENTS.md"), "Use spaces.\n")
	e.lib = nil
	e.runTurn(context.Background(), "third")
	if u := userWithNote(f.got()[2]); !strings.Contains(u, "AGENTS.md changed since this session began") || !strings.Contains(u, "Use spaces.") {
		t.Errorf("third prompt: %q", u)
	}
}

// TestLibraryKnowledgeEndToEnd: the person adds a folder with the real
// binary (embedding through config.yaml's embedding: model on the fake
// embedder), then a -p run's model searches it and reads a passage.
func TestLibraryKnowledgeEndToEnd(t *testing.T) {
	fe := newFakeEmbedder(t, 120)
	cfg, st := libEnv(t, fe)
	fm := newFakeModel(t)
	fm.push(callsReply(fakeCall{"knowledge_search", map[string]any{"query": "mite drop on a sticky board"}}), textReply("found it"))
	proj := copyProject(t, "basic")
	env := []string{"OPENAI_BASE_URL=" + fm.url(), "LEMBAS_MODEL=mock", "XDG_STATE_HOME=" + st, "XDG_CONFIG_HOME=" + cfg}
	corpus, _ := filepath.Abs(filepath.Join("testdata", "library", "corpus"))
	r := runLembas(t, env, proj, "", "library", "add", corpus)
	if r.code != 0 || !strings.Contains(r.stderr, "indexed 12 files (12 changed, 0 removed)") || !strings.Contains(r.stderr, "words and meaning (emb/hashbag)") {
		t.Fatalf("library add: %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if fe.refused.Load() == 0 {
		t.Errorf("no piece was long enough to be refused and split")
	}
	r = runLembas(t, env, proj, "", "--model", "openai/mock", "-p", "what about varroa?")
	if r.code != 0 || len(fm.got()) != 2 {
		t.Fatalf("-p: %d, %d requests\n%s", r.code, len(fm.got()), r.stderr)
	}
	res := toolResults(fm.got()[1])
	if len(res) != 1 || !strings.Contains(res[0], "beekeeping.md") || !strings.Contains(res[0], "words and meaning") {
		t.Errorf("knowledge_search result: %q", res)
	}
	rows := strings.Split(res[0], "\n- ")
	if len(rows) < 2 || !strings.Contains(rows[1], "beekeeping.md") || !strings.Contains(rows[1], "sticky board") {
		t.Errorf("beekeeping.md is not first, or its snippet misses the words: %q", res[0])
	}
}
