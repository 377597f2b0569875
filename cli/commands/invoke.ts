import fs from "node:fs/promises";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { errorFromResponse, type ApiClient } from "../api-client.js";
import type { Args, Command, Context } from "../command.js";
import { CliError, UsageError } from "../errors.js";
import { fmtTaskStatus } from "../output.js";
import { resolveFunctionRef } from "../project.js";

interface TaskRecord {
  id: string;
  functionId: string;
  status: number;
  progress: number;
}

/** A task's result: the function's status, content type and body; `status` 0 while not finished. */
export interface TaskResult {
  id: string;
  status: number;
  progress: number;
  contentType: string | null;
  body: unknown;
}

/** One read of the result operation, holding up to `wait` seconds for the task to finish. */
async function readResult(api: ApiClient, taskId: string, wait: number): Promise<TaskResult> {
  const res = await api.raw("GET", `/v1/task/${taskId}/result`, { query: { wait } });
  const text = await res.text();
  const contentType = res.headers.get("content-type");
  if (res.status === 202) {
    // The service's "still running" answer; a finished function may also answer 202, which the
    // task record tells apart.
    const task = await api.get<TaskRecord>(`/v1/task/${taskId}`);
    if (task.status === 0) return { id: taskId, status: 0, progress: task.progress, contentType: null, body: null };
  }
  return { id: taskId, status: res.status, progress: 100, contentType, body: decodeBody(text, contentType) };
}

function decodeBody(text: string, contentType: string | null): unknown {
  if (contentType && /[/+]json\b/i.test(contentType)) {
    try {
      return JSON.parse(text);
    } catch {
      /* the function said JSON but sent something else: show it as text */
    }
  }
  return text;
}

async function waitResult(api: ApiClient, taskId: string, maxWaitSeconds: number): Promise<TaskResult> {
  const deadline = Date.now() + maxWaitSeconds * 1000;
  for (;;) {
    const left = Math.ceil((deadline - Date.now()) / 1000);
    const r = await readResult(api, taskId, Math.max(0, Math.min(30, left)));
    if (r.status !== 0) return r;
    if (left <= 0) throw new CliError("wait_timeout", `task ${taskId} has not finished after ${maxWaitSeconds}s (progress ${r.progress}%)`, [], 1, `read it later with: gcfaas result ${taskId}`);
    await sleep(100);
  }
}

/** Prints a result; returns the exit code: 0 for a 1xx–3xx answer, 1 for 4xx/5xx. */
function printResult(ctx: Context, r: TaskResult): number {
  ctx.out.result(r, () => {
    ctx.out.note(`task ${r.id}: ${fmtTaskStatus(r.status, r.progress)}${r.contentType ? ` (${r.contentType})` : ""}`);
    const body = typeof r.body === "string" ? r.body : JSON.stringify(r.body, null, 2);
    if (body) ctx.out.stdout.write(body.endsWith("\n") ? body : `${body}\n`);
  });
  if (r.status >= 400) {
    ctx.out.stderr.write(`error: task_failed: task ${r.id} finished with status ${fmtTaskStatus(r.status, r.progress)}\n`);
    return 1;
  }
  return 0;
}

/** `--data` as bytes: inline text, `@file`, or `-` for stdin; undefined when not given. */
export async function readDataBytes(ctx: Context, a: Args): Promise<Uint8Array | undefined> {
  const raw = a.str("data");
  if (raw === undefined) return undefined;
  if (raw === "-") {
    const chunks: Buffer[] = [];
    for await (const c of ctx.stdin) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(String(c)));
    return Buffer.concat(chunks);
  }
  if (raw.startsWith("@")) {
    const file = path.resolve(ctx.cwd, raw.slice(1));
    return fs.readFile(file).catch(() => {
      throw new UsageError(`cannot read --data file ${raw.slice(1)}`, a.command);
    });
  }
  return Buffer.from(raw, "utf8");
}

async function readData(ctx: Context, a: Args): Promise<unknown> {
  const bytes = await readDataBytes(ctx, a);
  if (bytes === undefined) return undefined;
  try {
    return JSON.parse(Buffer.from(bytes).toString("utf8"));
  } catch (err) {
    throw new UsageError(`--data must be valid JSON (${(err as Error).message})`, a.command);
  }
}

export function parseQuery(a: Args): URLSearchParams {
  const q = new URLSearchParams();
  for (const item of a.list("query")) {
    const eq = item.indexOf("=");
    if (eq <= 0) throw new UsageError(`--query takes key=value, got "${item}"`, a.command);
    q.append(item.slice(0, eq), item.slice(eq + 1));
  }
  return q;
}

function parseHeaders(a: Args): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const item of a.list("header")) {
    const colon = item.indexOf(":");
    if (colon <= 0) throw new UsageError(`--header takes "Name: value", got "${item}"`, a.command);
    headers[item.slice(0, colon).trim().toLowerCase()] = item.slice(colon + 1).trim();
  }
  return headers;
}

export const invoke: Command = {
  name: "invoke",
  summary: "run a function once: create a task, wait for it, print its result",
  usage: "invoke <function-id|dir> [--data JSON|@file|-] [--query k=v ...] [--header 'K: V' ...] [--no-wait]",
  help: [
    "--data, -d JSON      the task's JSON body; @file reads a file, - reads stdin",
    "--query, -q k=v      a query parameter handed to the function (repeatable)",
    "--header, -H 'K: V'  a header handed to the function (repeatable)",
    "--no-wait            print the task id and return",
    "                     (otherwise the call asks the service to answer with the result itself, Prefer: wait)",
    "--max-wait SECONDS   give up waiting after this long (default 300)",
    "",
    "Prints the function's response body (JSON pretty-printed); the status goes to stderr.",
    "Exits 1 when the function answered 4xx or 5xx (500 crashed, 504 timed out, 410 cancelled).",
  ],
  examples: ["gcfaas invoke hello --query name=Ada", `gcfaas invoke 01jc9x2k7m --data '{"n": 7}'`, "echo '[1,2]' | gcfaas invoke . --data -"],
  options: {
    data: { type: "string", short: "d" },
    query: { type: "string", short: "q", multiple: true },
    header: { type: "string", short: "H", multiple: true },
    "no-wait": { type: "boolean" },
    "max-wait": { type: "string" },
  },
  args: [1, 1],
  async run(ctx, a) {
    const ref = await resolveFunctionRef(ctx, a.pos(0, "<function-id|dir>"), "invoke");
    const data = await readData(ctx, a);
    const query = parseQuery(a);
    const headers = parseHeaders(a);
    const maxWait = a.int("max-wait") ?? 300;
    const api = await ctx.api();
    const body = data === undefined ? {} : { json: data };
    if (a.flag("no-wait")) {
      const { id } = await api.call<{ id: string }>("POST", `/v1/task/${ref.id}`, { query, headers, ...body });
      ctx.out.result({ id }, () => ctx.out.line(id));
      return 0;
    }
    // One round trip when the function answers within the synchronous wait (RFC 7240 Prefer).
    const prefer = `wait=${Math.max(1, Math.min(30, maxWait))}`;
    const res = await api.raw("POST", `/v1/task/${ref.id}`, { query, headers: { ...headers, prefer }, ...body });
    const text = await res.text();
    const contentType = res.headers.get("content-type");
    if (res.headers.get("preference-applied") === "wait") {
      const id = res.headers.get("x-task-id") ?? "";
      return printResult(ctx, { id, status: res.status, progress: 100, contentType, body: decodeBody(text, contentType) });
    }
    if (!res.ok) throw errorFromResponse(res, text);
    const { id } = JSON.parse(text) as { id: string };
    ctx.out.note(`task ${id} created; waiting for its result`);
    return printResult(ctx, await waitResult(api, id, maxWait));
  },
};

export const result: Command = {
  name: "result",
  summary: "print a task's result (or its progress while it runs)",
  usage: "result <task-id> [--wait SECONDS]",
  help: ["--wait SECONDS   hold up to this long (at most 30) for the task to finish"],
  examples: ["gcfaas result 01jc9x5v3e --wait 10"],
  options: { wait: { type: "string", short: "w" } },
  args: [1, 1],
  async run(ctx, a) {
    const taskId = a.pos(0, "<task-id>");
    const wait = a.int("wait") ?? 0;
    if (wait < 0 || wait > 30) throw new UsageError("--wait must be from 0 to 30 seconds", "result");
    const api = await ctx.api();
    await api.get(`/v1/task/${taskId}`); // unknown ids answer the API's own 404, not a function's
    const r = await readResult(api, taskId, wait);
    if (r.status === 0) {
      ctx.out.result({ id: taskId, status: 0, progress: r.progress }, () => ctx.out.line(`task ${taskId} is ${fmtTaskStatus(0, r.progress)}; no result yet`));
      return 0;
    }
    return printResult(ctx, r);
  },
};

interface TaskLog {
  id: string;
  finished: boolean;
  log: string[];
}

export const logs: Command = {
  name: "logs",
  summary: "print a task's log (the function's stdout and stderr)",
  usage: "logs <task-id> [--follow]",
  help: ["--follow, -f   keep printing new lines until the task finishes"],
  examples: ["gcfaas logs 01jc9x5v3e", "gcfaas logs 01jc9x5v3e --follow"],
  options: { follow: { type: "boolean", short: "f" } },
  args: [1, 1],
  async run(ctx, a) {
    const taskId = a.pos(0, "<task-id>");
    const api = await ctx.api();
    let log = await api.get<TaskLog>(`/v1/task/${taskId}/log`);
    if (a.flag("follow") && !ctx.out.json) {
      let seen = 0;
      for (;;) {
        for (const line of log.log.slice(seen)) ctx.out.line(line);
        seen = Math.max(seen, log.log.length);
        if (log.finished) return 0;
        await sleep(1000);
        log = await api.get<TaskLog>(`/v1/task/${taskId}/log`);
      }
    }
    if (a.flag("follow")) {
      while (!log.finished) {
        await sleep(1000);
        log = await api.get<TaskLog>(`/v1/task/${taskId}/log`);
      }
    }
    ctx.out.result(log, () => {
      for (const line of log.log) ctx.out.line(line);
      if (!log.finished) ctx.out.note(`(task ${taskId} has not finished; more lines may come: gcfaas logs ${taskId} --follow)`);
      else if (log.log.length === 0) ctx.out.note("(no log lines)");
    });
    return 0;
  },
};
