// lembas is a terminal coding agent for any OpenAI-compatible model server.
//
// Usage:
//
//	lembas [-c | --session ID] ["prompt"]   the interactive session (-i forces it off a terminal)
//	lembas -p "prompt" [--model REF] [--mode MODE] [--output-format text|json|stream-json]
//	lembas models
//	lembas sessions list|show|delete|prune
//	lembas config get|set|list|path
//	lembas memory list|show|rm               the records the model keeps across sessions
//	lembas library add|list|rm|reindex       the knowledge documents the model searches
//	lembas permissions check [--mode M] [--cwd DIR] -- COMMAND... | --tool read|write --path P
//	lembas sandbox check [--cwd DIR] [--mode M]
//	lembas mcp list [--cwd DIR]
//	lembas mcp login|logout NAME [--cwd DIR]
//
// # Models
//
// A model ref is <connection>/<model>. Connections come from config.yaml,
// from OPENAI_BASE_URL and OPENAI_API_KEY (the connection "openai"), and
// from local servers on their usual loopback ports (llama.cpp 8080, Ollama
// 11434, LM Studio 1234, vLLM 8000). A bare model name is looked up in
// every connection.
//
// # Modes
//
// manual (the default) runs reads and asks before edits and commands; edit
// also runs edits; auto runs everything; plan only reads. In -p nobody can
// be asked, so a call that would be asked is refused and the model told why.
//
// # Sandbox
//
// Every bash call runs in an OS sandbox (Landlock on Linux, sandbox-exec on
// macOS): it reads everywhere and writes only in the project, the temp
// folders, a few devices and the build caches (config.yaml sandbox:); the
// git folder's hooks and config stay as they were; plan mode writes
// nothing. A call may ask to run unsandboxed, with a reason: the person is
// always asked, and -p refuses it.
//
// # Background jobs and subagents
//
// bash with background: true, or a command still running at its timeout,
// becomes a job (j1, j2, …); task gives work to a subagent, a fresh
// conversation with the parent's permissions or fewer. job_list,
// job_output, job_stop and job_send work on both. A job that ends tells
// the model at its next step, or runs a turn of lembas's own when the
// session is idle. Jobs die with lembas; with -p they are stopped when the
// answer is done. /jobs and /agents show them in the interactive session.
//
// # MCP servers and the web
//
// Servers listed under mcp: in config.yaml (command/args/env/cwd, or
// url/headers; ${VAR} from the environment), in a trusted project's
// .mcp.json, or given by an editor in ACP session/new join a session's
// tools as mcp__<server>__<tool>. Their calls are asked in manual, edit
// and plan unless a rule (mcp__server, mcp__server__tool) allows them.
// A remote server that wants OAuth is logged in to with `lembas mcp login
// NAME` (or in the interactive session, which shows the address); a
// server's questions (elicitation) are asked like ask_user's.
// webfetch reads one http(s) page as markdown, asked per host; loopback
// and private addresses need a rule naming the host.
//
// # Files
//
// config.yaml lives in $XDG_CONFIG_HOME/lembas (~/.config/lembas); sessions
// in $XDG_STATE_HOME/lembas/sessions (~/.local/state/lembas/sessions), one
// append-only JSON Lines journal each (<id>.jsonl), compacted atomically.
// Memory, notes and the library's index
// are under the same state folder (memory/, library/); skills are folders
// with a SKILL.md in the project's .agent/skills (also .agents/skills,
// .claude/skills) and in ~/.config/lembas/skills; instruction files
// (AGENTS.md, else CLAUDE.md) stack from the git root down to the project,
// after ~/.config/lembas/AGENTS.md.
//
// # Exit status
//
// 0 done, 1 failed, 2 usage error, 130 cancelled; permissions check exits
// 0 allow, 3 ask, 4 refuse.
package main
