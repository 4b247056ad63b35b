// A small ACP client on the official TypeScript SDK (@agentclientprotocol/sdk),
// run by TestACPOfficialClient (acp_sdk_test.go) from .ci/run. It drives one
// whole turn of `lembas serve --stdio` against the fake model (a read, an
// edit and a command, each edit and command approved), with the editor's
// fs methods offered so the file tools go through them, then loads the
// session in a second process. Every message the agent sends is checked
// against the ACP JSON schema the SDK package ships, with the small
// validator below (no other npm package).
//
// Environment: ACP_SDK_PREFIX (the npm --prefix the SDK is installed in),
// LEMBAS_BIN, PROJECT (the project folder); the model's environment is
// inherited by the agent.

import { spawn } from "node:child_process";
import { createRequire } from "node:module";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const prefix = process.env.ACP_SDK_PREFIX;
const bin = process.env.LEMBAS_BIN;
const project = process.env.PROJECT;
const req = createRequire(join(prefix, "package.json"));
const acp = await import(pathToFileURL(req.resolve("@agentclientprotocol/sdk")).href);
const schemaPath = req.resolve("@agentclientprotocol/sdk/schema/v1/schema.json");
const schema = JSON.parse(readFileSync(schemaPath, "utf8"));
const sdkVersion = JSON.parse(readFileSync(join(prefix, "node_modules/@agentclientprotocol/sdk/package.json"), "utf8")).version;

function fail(msg) {
  console.error("acp client: " + msg);
  process.exit(1);
}

// ---- A JSON Schema validator for what schema.json uses: $ref, type,
// const, enum, properties, required, additionalProperties, items, allOf,
// anyOf, oneOf, not, minimum, maximum, minLength and integer formats.
const defs = schema.$defs;
const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
const typeOf = (v) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);
function isType(v, t) {
  switch (t) {
    case "integer": return Number.isInteger(v);
    case "number": return typeof v === "number";
    case "object": return isObj(v);
    case "array": return Array.isArray(v);
    case "null": return v === null;
    default: return typeof v === t;
  }
}
function deepEq(a, b) { return JSON.stringify(a) === JSON.stringify(b); }
function check(v, s, path) {
  if (s === true || s === undefined) return [];
  if (s === false) return [`${path}: not allowed here`];
  const errs = [];
  if (s.$ref) {
    const name = s.$ref.replace("#/$defs/", "");
    if (!defs[name]) return [`${path}: unknown $ref ${s.$ref}`];
    errs.push(...check(v, defs[name], path));
  }
  if (s.type !== undefined) {
    const types = [].concat(s.type);
    if (!types.some((t) => isType(v, t))) return [`${path}: want ${types.join("|")}, got ${typeOf(v)}`];
  }
  if ("const" in s && !deepEq(v, s.const)) errs.push(`${path}: want ${JSON.stringify(s.const)}`);
  if (s.enum && !s.enum.some((e) => deepEq(e, v))) errs.push(`${path}: not one of ${JSON.stringify(s.enum)}`);
  if (typeof v === "number") {
    if (s.minimum !== undefined && v < s.minimum) errs.push(`${path}: below ${s.minimum}`);
    if (s.maximum !== undefined && v > s.maximum) errs.push(`${path}: above ${s.maximum}`);
    if (/^u?int/.test(s.format || "") && !Number.isInteger(v)) errs.push(`${path}: not an integer`);
    if (/^uint/.test(s.format || "") && v < 0) errs.push(`${path}: negative`);
  }
  if (typeof v === "string" && s.minLength !== undefined && v.length < s.minLength) errs.push(`${path}: shorter than ${s.minLength}`);
  if (isObj(v)) {
    for (const k of s.required || []) if (!(k in v)) errs.push(`${path}: missing ${k}`);
    const props = s.properties || {};
    for (const [k, val] of Object.entries(v)) {
      if (k in props) errs.push(...check(val, props[k], `${path}.${k}`));
      else if (s.additionalProperties !== undefined) errs.push(...check(val, s.additionalProperties, `${path}.${k}`));
    }
  }
  if (Array.isArray(v) && s.items) v.forEach((x, i) => errs.push(...check(x, s.items, `${path}[${i}]`)));
  for (const sub of s.allOf || []) errs.push(...check(v, sub, path));
  if (s.anyOf && !s.anyOf.some((sub) => check(v, sub, path).length === 0)) {
    errs.push(`${path}: matches none of anyOf (${s.anyOf.map((x) => x.title || x.$ref || x.type).join(", ")})`);
  }
  if (s.oneOf) {
    const n = s.oneOf.filter((sub) => check(v, sub, path).length === 0).length;
    if (n !== 1) {
      const why = s.oneOf.map((sub) => check(v, sub, path)).sort((a, b) => a.length - b.length)[0] || [];
      errs.push(`${path}: matches ${n} of oneOf, want 1 (${why.slice(0, 3).join("; ")})`);
    }
  }
  if (s.not && check(v, s.not, path).length === 0) errs.push(`${path}: matches a "not"`);
  return errs;
}

// What each message the agent sends must be, by its method or, for a
// response, by the method of the request it answers.
const responseDefs = {
  initialize: "InitializeResponse", "session/new": "NewSessionResponse", "session/load": "LoadSessionResponse",
  "session/prompt": "PromptResponse", "session/set_mode": "SetSessionModeResponse",
};
const requestDefs = {
  "session/request_permission": "RequestPermissionRequest",
  "fs/read_text_file": "ReadTextFileRequest", "fs/write_text_file": "WriteTextFileRequest",
};
const notificationDefs = { "session/update": "SessionNotification" };

let validated = 0;
function validateIncoming(msg, sent) {
  const errs = check(msg, { anyOf: schema.anyOf }, "message");
  let def;
  if (msg.method !== undefined && msg.id !== undefined) def = requestDefs[msg.method];
  else if (msg.method !== undefined) def = notificationDefs[msg.method];
  else if (msg.error !== undefined) fail(`the agent answered ${sent.get(JSON.stringify(msg.id))} with an error: ${JSON.stringify(msg.error)}`);
  else def = responseDefs[sent.get(JSON.stringify(msg.id))];
  if (!def) fail(`unexpected message from the agent: ${JSON.stringify(msg).slice(0, 300)}`);
  const body = msg.method !== undefined ? msg.params : msg.result;
  errs.push(...check(body, { $ref: `#/$defs/${def}` }, def));
  if (errs.length) fail(`a message does not fit the schema:\n  ${errs.slice(0, 8).join("\n  ")}\n  ${JSON.stringify(msg).slice(0, 600)}`);
  validated++;
}

// connect starts the agent and gives the SDK streams that validate every
// line coming in and note the method of every request going out.
function connect() {
  const child = spawn(bin, ["serve", "--stdio"], { cwd: project, stdio: ["pipe", "pipe", "inherit"] });
  const sent = new Map();
  let buf = "";
  const decoder = new TextDecoder();
  const input = Readable.toWeb(child.stdout).pipeThrough(new TransformStream({
    transform(chunk, ctl) {
      buf += decoder.decode(chunk, { stream: true });
      let i;
      while ((i = buf.indexOf("\n")) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (!line) continue;
        let msg;
        try { msg = JSON.parse(line); } catch { fail(`stdout carries a line that is not JSON: ${line.slice(0, 200)}`); }
        validateIncoming(msg, sent);
      }
      ctl.enqueue(chunk);
    },
  }));
  const outgoing = new TransformStream({
    transform(chunk, ctl) {
      for (const line of new TextDecoder().decode(chunk).split("\n")) {
        if (!line.trim()) continue;
        const msg = JSON.parse(line);
        if (msg.method !== undefined && msg.id !== undefined) sent.set(JSON.stringify(msg.id), msg.method);
      }
      ctl.enqueue(chunk);
    },
  });
  outgoing.readable.pipeTo(Writable.toWeb(child.stdin)).catch(() => {});
  const exited = new Promise((resolve) => child.on("exit", (code) => resolve(code)));
  return { stream: acp.ndJsonStream(outgoing.writable, input), child, exited };
}

const updates = [];
const permissions = [];
const reads = [];
const writes = [];
const app = acp.client({ name: "lembas-ci" })
  .onRequest("session/request_permission", async ({ params }) => {
    permissions.push(params);
    return { outcome: { outcome: "selected", optionId: params.options.find((o) => o.kind === "allow_once").optionId } };
  })
  .onRequest("fs/read_text_file", async ({ params }) => {
    reads.push(params.path);
    return { content: readFileSync(params.path, "utf8") };
  })
  .onRequest("fs/write_text_file", async ({ params }) => {
    writes.push(params.path);
    writeFileSync(params.path, params.content);
    return {};
  })
  .onNotification("session/update", async ({ params }) => { updates.push(params.update); });

const caps = { fs: { readTextFile: true, writeTextFile: true } };
let sessionId;
{
  const { stream, child, exited } = connect();
  await app.connectWith(stream, async (agent) => {
    const init = await agent.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: caps, clientInfo: { name: "lembas-ci", version: "1" } });
    if (init.protocolVersion !== 1 || init.agentCapabilities.loadSession !== true || init._meta.lembas.limits !== null) fail(`initialize: ${JSON.stringify(init)}`);
    const s = await agent.request("session/new", { cwd: project, mcpServers: [] });
    sessionId = s.sessionId;
    if (s.modes.currentModeId !== "manual") fail(`session/new: ${JSON.stringify(s)}`);
    const r = await agent.request("session/prompt", { sessionId, prompt: [{ type: "text", text: "replace TODO with DONE in src/app.txt, then cat it" }] });
    if (r.stopReason !== "end_turn") fail(`session/prompt: ${JSON.stringify(r)}`);
    await agent.request("session/set_mode", { sessionId, modeId: "edit" });
  });
  child.stdin.end();
  if ((await exited) !== 0) fail("the agent did not exit 0 after stdin closed");
}
const kinds = updates.map((u) => u.sessionUpdate + (u.kind ? ":" + u.kind : "") + (u.status ? ":" + u.status : ""));
for (const want of ["plan", "available_commands_update", "tool_call:read:pending", "tool_call:edit:pending", "tool_call:execute:pending", "tool_call_update:completed", "agent_message_chunk", "current_mode_update"]) {
  if (!kinds.includes(want)) fail(`no ${want} among the updates: ${kinds.join(" ")}`);
}
const planUp = updates.find((u) => u.sessionUpdate === "plan");
if (!planUp || planUp.entries.length !== 2 || planUp.entries[0].status !== "in_progress" || !planUp._meta?.lembas?.plan) fail(`plan update ${JSON.stringify(planUp)}`);
const diff = updates.flatMap((u) => u.content || []).find((c) => c.type === "diff");
if (!diff || diff.oldText !== "status: TODO\n" || diff.newText !== "status: DONE\n") fail(`edit diff ${JSON.stringify(diff)}`);
if (permissions.length !== 2) fail(`${permissions.length} permission requests, want 2 (the edit and the command)`);
if (!reads.some((p) => p.endsWith("app.txt")) || !writes.some((p) => p.endsWith("app.txt"))) fail(`fs methods not used: reads ${reads}, writes ${writes}`);
if (readFileSync(join(project, "src/app.txt"), "utf8") !== "status: DONE\n") fail("src/app.txt was not changed");

// A second process loads the session and replays it.
updates.length = 0;
{
  const { stream, child, exited } = connect();
  await app.connectWith(stream, async (agent) => {
    await agent.request("initialize", { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: caps });
    const r = await agent.request("session/load", { sessionId, cwd: project, mcpServers: [] });
    if (r === null || typeof r !== "object") fail(`session/load answered ${JSON.stringify(r)}`);
  });
  child.stdin.end();
  if ((await exited) !== 0) fail("the second agent did not exit 0");
}
const replayed = updates.map((u) => u.sessionUpdate);
if (!replayed.includes("user_message_chunk") || !replayed.includes("tool_call") || !replayed.includes("agent_message_chunk")) {
  fail(`session/load replayed ${replayed.join(" ")}`);
}
console.log(`acp client: ok — SDK ${sdkVersion}, ${validated} messages from lembas valid against its schema/v1/schema.json`);
