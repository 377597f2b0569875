import { spawn } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LANGS, type Lang } from "../../agent/runtimes/languages.js";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { runnableBlocks, type DocBlock } from "../support/doc-examples.js";
import { zipItems, type ZipItem } from "../support/zip.js";
import { ADMIN_TOKEN, api, localStack, ROOT, type AgentProcess, type Api, type LocalWorker } from "./harness.js";
import { deploy, invoke, waitBuild } from "./deploy.js";
import { RENEWAL_CRON } from "../../worker/crons.js";

/**
 * Every code block of README.md and docs/*.md that a reader would run is run here, verbatim, against
 * a local Worker and agent; a block that cannot run says why in its `<!-- doctest: skip … -->` marker.
 */

const blocks = runnableBlocks(ROOT);
const shellBlocks = blocks.filter((b) => b.marker?.kind === "run");
const handlerBlocks = blocks.filter((b) => b.marker?.kind === "handler");

let worker: LocalWorker;
let agent: AgentProcess;
let user: Api;
let token: string;
/** The account of `token` (ME in the blocks: the operator's examples grant it). */
let accountId: string;
const work: string[] = [];
/** A folder holding a `gcfaas` that runs this checkout's CLI, as `npm install -g .` would give. */
let cliBin: string;

beforeAll(async () => {
  cliBin = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-doc-bin-"));
  work.push(cliBin);
  await fs.writeFile(path.join(cliBin, "gcfaas"), `#!/bin/sh\nexec "${process.execPath}" "${path.join(ROOT, "cli/bin.js")}" "$@"\n`, { mode: 0o755 });
  await ensureOfflineImages(LANGS);
  ({ worker, agent, token, accountId, user } = await localStack({ account: "docs", nodeId: "docs-agent", agentArgs: ["--slots", "4"], testScheduled: true }));
}, 1_800_000);

afterAll(async () => {
  await agent?.stop();
  await worker?.dispose();
  await Promise.all(work.map((d) => fs.rm(d, { recursive: true, force: true })));
});

describe("every runnable block of README.md and docs/*.md", () => {
  it("carries a doctest marker: run, handler, or skip with a reason", () => {
    const unmarked = blocks.filter((b) => !b.marker || b.marker.kind === "invalid").map((b) => b.where);
    expect(unmarked).toEqual([]);
  });
});

/** Fills the placeholder of each variable the marker names: its assignment in the block, else the environment. */
function fillPlaceholders(code: string, vars: Record<string, string>): string {
  let out = code;
  for (const [name, value] of Object.entries(vars)) out = out.replace(new RegExp(`(^|[\\s;])${name}=\\S+`, "m"), `$1${name}='${value}'`);
  return out;
}

/**
 * Runs a block as a reader would after `gcfaas login` (the CLI on the PATH, the service's URL and
 * token in GCFAAS_URL and GCFAAS_TOKEN), with `home` as HOME; npm is kept offline, and its global
 * prefix inside `home` (`npm install -g .` installs there, and its `gcfaas` comes first on the PATH).
 */
function runBash(code: string, cwd: string, home: string, env: Record<string, string>): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const npmPrefix = path.join(home, "npm-global");
  const PATH = [path.join(npmPrefix, "bin"), cliBin, process.env.PATH ?? ""].join(path.delimiter);
  const npm = { npm_config_prefix: npmPrefix, npm_config_offline: "true", npm_config_update_notifier: "false", npm_config_fund: "false", npm_config_audit: "false" };
  return new Promise((resolve, reject) => {
    const child = spawn("bash", ["-c", code], { cwd, env: { PATH, HOME: home, GCFAAS_URL: worker.url, GCFAAS_TOKEN: token, ...npm, ...env } });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    child.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    child.on("error", reject);
    child.on("close", (c) => resolve({ code: c, stdout, stderr }));
  });
}

// It keeps a little storage (GC-Storage: "hi"), so the storage examples have some to show and delete.
const HELLO_PY = "def handle(event, context):\n    return {'statusCode': 200, 'headers': {'GC-Storage': 'aGk='}, 'body': {'ok': True}}\n";

/** A function folder's `.gcfaas.json`, naming the fixture function `id`. */
const projectFile = (id: string) => `${JSON.stringify({ functionId: id, name: "docfixture", lang: "py" })}\n`;

/** The files a block's commands read, by name (a path makes its folder), made from the block's values. */
const FILES: Record<string, (v: Record<string, string>) => Promise<Buffer | string>> = {
  "hello.zip": () => zipItems([{ name: "handler.py", data: HELLO_PY }]),
  "data.csv": async () => "id,name\n1,Ada\n",
  "input.json": async () => '{"n": 2}\n',
  "params.json": async () => '{"lang": "en"}\n',
  "photo.png": async () => Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 1, 2, 255]),
  "password.txt": async () => "correct horse battery staple\n",
  ".gcfaas.json": async (v) => projectFile(v.FN!),
  "hello/.gcfaas.json": async (v) => projectFile(v.FN!),
  "resize/.gcfaas.json": async (v) => projectFile(v.FN!),
  "report/.gcfaas.json": async (v) => projectFile(v.FN!),
  "notify/.gcfaas.json": async (v) => projectFile(v.FN2!),
};

/**
 * What the blocks' placeholders stand for, made afresh for each block (a block may delete them): FN
 * a function with two successful builds, BUILD the newer and OLDER_BUILD the other, TASK a finished task of it, FN2
 * another, TRIGGER a trigger from FN to FN2, TAG a tag; ADMIN the operator token, ACCOUNT and
 * TOKEN_ID another account and its token; SCHED a schedule of FN, EP a public endpoint of FN, GC_TASK
 * a finished task started through it.
 */
/** A task started through a public endpoint, once its result is there. */
async function publicTask(ep: string): Promise<string> {
  const anyone = api(worker.url);
  const { id } = await anyone.json("POST", `/gc/${ep}`, 201, { json: {} });
  for (let i = 0; i < 20; i++) {
    const res = await anyone("GET", `/gc/${id}/result?wait=10`);
    await res.body?.cancel();
    if (res.status === 200) return id;
  }
  throw new Error(`public task ${id} did not finish`);
}

let made = 0;
async function fixtures(): Promise<Record<string, string>> {
  const zip = await zipItems([{ name: "handler.py", data: HELLO_PY }]);
  const { functionId: FN } = await deploy(user, "py", zip, "docfixture");
  const { id: newer } = await user.json("POST", `/v1/build/${FN}?arch=amd64`, 201, { body: zip, headers: { "content-type": "application/octet-stream" } });
  const BUILD = (await waitBuild(user, newer)).id as string;
  const OLDER_BUILD = (await user.json("GET", `/v1/build/list?functionId=${FN}&limit=10`, 200)).results.find((b: { id: string }) => b.id !== BUILD).id as string;
  const TASK = (await invoke(user, FN)).id;
  const { id: FN2 } = await user.json("POST", "/v1/function", 201, { json: { name: "docfixture2", lang: "PY", type: "DOCKER" } });
  const { id: TRIGGER } = await user.json("POST", "/v1/trigger", 201, { json: { functionId: FN, nextId: FN2, status: 200, includeResult: false } });
  const { id: TAG } = await user.json("POST", "/v1/tag", 201, { json: { name: `fixture${++made}`, color: "#123456" } });
  const { id: SCHED } = await user.json("POST", "/v1/scheduled", 201, { json: { functionId: FN, cron: "0 9 * * mon-fri", timezone: "UTC" } });
  const { id: EP } = await user.json("POST", `/v1/endpoint/${FN}`, 201);
  const GC_TASK = await publicTask(EP);
  const other = await api(worker.url, ADMIN_TOKEN).json("POST", "/v1/admin/accounts", 201, { json: { name: "docfixture" } });
  // Invoices come only from the monthly renewal (worker/billing/renewal.ts): fired here, idempotent.
  await worker.triggerCron(RENEWAL_CRON);
  const INVOICE = (await user.json<{ id: string }[]>("GET", "/v1/invoice/list", 200))[0]!.id;
  return { INVOICE, FN, BUILD, OLDER_BUILD, TASK, FN2, TRIGGER, TAG, SCHED, EP, GC_TASK, ADMIN: ADMIN_TOKEN, ACCOUNT: other.accountId, TOKEN_ID: other.tokenId };
}

/**
 * The last JSON answer printed: curl -s adds no newline, so answers may share a line ({…}{…}); the
 * CLI prints JSON over several lines, from a line starting with `{` to the end.
 */
function lastAnswer(stdout: string): unknown {
  const lines = stdout.trim().split("\n");
  const line = lines.at(-1) ?? "";
  if (line !== "}") {
    const start = line.lastIndexOf("}{");
    return JSON.parse(start < 0 ? line : line.slice(start + 1));
  }
  const open = lines.findLastIndex((l) => l.startsWith("{"));
  return JSON.parse(lines.slice(open).join("\n"));
}

/** The JSON a block's last command says it prints (`curl … # {"message": …}`), when it says one. */
function promisedOutput(block: DocBlock): unknown {
  const last = block.code.trim().split("\n").at(-1) ?? "";
  const m = /#\s*(\{.*\})\s*$/.exec(last);
  return m?.[1] === undefined ? undefined : JSON.parse(m[1]);
}

describe.each(shellBlocks.map((b) => [b.where, b] as const))("shell block %s", (_where, block) => {
  it("runs to the end with exit code 0 and prints what the doc says", async () => {
    const cwd = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-doc-"));
    work.push(cwd);
    const values: Record<string, string> = { URL: worker.url, T: token, TOKEN: token, ME: accountId, ...(await fixtures()) };
    const marker = block.marker?.kind === "run" ? block.marker : { env: [], fill: {}, files: [], inRepo: false };
    for (const f of marker.files) {
      const data = FILES[f];
      if (data === undefined) throw new Error(`${block.where}: the test has no file ${f}`);
      await fs.mkdir(path.dirname(path.join(cwd, f)), { recursive: true });
      await fs.writeFile(path.join(cwd, f), await data(values));
    }
    const valueOf = (n: string) => {
      const v = values[n];
      if (v === undefined) throw new Error(`${block.where}: the test has no value for ${n}`);
      return v;
    };
    const vars = Object.fromEntries(marker.env.map((n) => [n, valueOf(n)]));
    let code = fillPlaceholders(block.code, vars);
    for (const [placeholder, n] of Object.entries(marker.fill)) code = code.replaceAll(placeholder, valueOf(n));
    const res = await runBash(code, marker.inRepo ? ROOT : cwd, cwd, vars);
    const filled: DocBlock = { ...block, code };
    expect(res.code, `stdout:\n${res.stdout}\nstderr:\n${res.stderr}`).toBe(0);
    // curl -s exits 0 on a refusal: an error body among the answers (each starts a line or follows
    // the answer before) is what shows an example went wrong.
    expect(res.stdout, res.stdout).not.toMatch(/(^|\})\{"error":\{"code":"/m);
    const promised = promisedOutput(filled);
    if (promised !== undefined) expect(lastAnswer(res.stdout)).toEqual(promised);
  }, 600_000);
});

/** What docs/runtimes.md says a handler is called, per fence language, and what surrounds it. */
const HANDLER_FILES: Record<string, { lang: Lang; file: string; extra?: ZipItem[] }> = {
  python: { lang: "py", file: "handler.py" },
  js: { lang: "js", file: "handler.js" },
  go: { lang: "go", file: "handler.go" },
  ruby: { lang: "rb", file: "handler.rb" },
  // "A library crate at the top level of the zip (Cargo.toml, src/lib.rs) depending on gcfaas = "0.1"".
  rust: {
    lang: "rs",
    file: "src/lib.rs",
    extra: [{ name: "Cargo.toml", data: '[package]\nname = "handler"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\ngcfaas = "0.1"\n' }],
  },
  csharp: { lang: "cs", file: "Handler.cs" },
};

/**
 * What each example answers for `?name=Ada`, as its code in the doc says: status and body (a task's
 * result replays the status, Content-Type and body, not the other headers: docs/concepts.md).
 */
const ANSWERS: Record<string, { status: number; body: (text: string) => void }> = {
  python: { status: 201, body: (t) => expect(JSON.parse(t)).toEqual({ message: "Hello, Ada!" }) },
  js: { status: 201, body: (t) => expect(JSON.parse(t)).toEqual({ message: "Hello, Ada!" }) },
  go: { status: 200, body: (t) => expect(t).toBe("hi") },
  ruby: { status: 201, body: (t) => expect(JSON.parse(t)).toEqual({ message: "Hello, Ada!" }) },
  rust: { status: 201, body: (t) => expect(JSON.parse(t)).toEqual({ message: "Ada" }) },
  csharp: { status: 201, body: (t) => expect(JSON.parse(t)).toEqual({ ok: true }) },
};

/** A task's answer with its headers: synchronously, then by the result operation while a cold start lasts. */
async function answerOf(functionId: string, query: string): Promise<Response> {
  const first = await user("POST", `/v1/task/${functionId}${query}`, { headers: { prefer: "wait=30" } });
  if (first.status !== 202) return first;
  const { id } = (await first.json()) as { id: string };
  for (let i = 0; i < 20; i++) {
    const res = await user("GET", `/v1/task/${id}/result?wait=10`);
    if (res.status !== 202) return res;
    await res.body?.cancel();
  }
  throw new Error(`task ${id} did not finish`);
}

describe.each(handlerBlocks.map((b) => [`${b.lang} (${b.where})`, b] as const))("handler example %s", (_name, block) => {
  it("builds from a zip of the block alone and answers as the doc says", async () => {
    const spec = HANDLER_FILES[block.lang];
    const answer = ANSWERS[block.lang];
    if (!spec || !answer) throw new Error(`no handler file or answer known for ${block.lang}`);
    const zip = await zipItems([{ name: spec.file, data: block.code }, ...(spec.extra ?? [])]);
    const { functionId, build } = await deploy(user, spec.lang, zip, `doc${spec.lang}`);
    expect(build.status, build.log.join("\n")).toBe("SUCCESS");
    const res = await answerOf(functionId, "?name=Ada");
    const text = await res.text();
    expect(res.status, text).toBe(answer.status);
    answer.body(text);
  }, 900_000);
});
