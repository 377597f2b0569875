import { setTimeout as sleep } from "node:timers/promises";
import { exchange, ok, type ApiClient } from "./api-client.js";
import { cmd } from "./cli-name.js";
import type { Context } from "./command.js";
import { CliError } from "./errors.js";
import { fmtTaskStatus } from "./output.js";

/** A task's result: the function's status, content type and body; `status` 0 while not finished. */
export interface TaskResult {
  id: string;
  status: number;
  progress: number;
  contentType: string | null;
  body: unknown;
  /** The response's headers, shown with `invoke -i`. */
  headers?: [string, string][];
}

export function headerList(h: Headers): [string, string][] {
  return [...h.entries()];
}

/**
 * The result with the headers the function answered with, for `invoke -i`: the result operation
 * replays only their Content-Type, the task record has them all (`responseHeaders`). A service
 * from before that field keeps the result's own headers.
 */
export async function withFunctionHeaders(api: ApiClient, r: TaskResult): Promise<TaskResult> {
  const task = await ok(api.GET("/v1/task/{id}", { params: { path: { id: r.id } } }));
  if (!task.responseHeaders) return r;
  const own = Object.entries(task.responseHeaders).map(([k, v]): [string, string] => [k.toLowerCase(), v]);
  return { ...r, headers: [["x-task-id", r.id], ...own.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))] };
}

/** One read of the result operation, holding up to `wait` seconds for the task to finish. */
export async function readResult(api: ApiClient, taskId: string, wait: number): Promise<TaskResult> {
  const { response: res, text } = await exchange((raw) => api.GET("/v1/task/{id}/result", { ...raw, params: { path: { id: taskId }, query: { wait } } }));
  const contentType = res.headers.get("content-type");
  if (res.status === 202) {
    // The service's "still running" answer; a finished function may also answer 202, which the
    // task record tells apart.
    const task = await ok(api.GET("/v1/task/{id}", { params: { path: { id: taskId } } }));
    if (task.status === 0) return { id: taskId, status: 0, progress: task.progress, contentType: null, body: null };
  }
  return { id: taskId, status: res.status, progress: 100, contentType, body: decodeBody(text, contentType), headers: headerList(res.headers) };
}

export function decodeBody(text: string, contentType: string | null): unknown {
  if (contentType && /[/+]json\b/i.test(contentType)) {
    try {
      return JSON.parse(text);
    } catch {
      /* the function said JSON but sent something else: show it as text */
    }
  }
  return text;
}

/** Waits for the task's result until `deadline` (ms since the epoch): the whole --max-wait, not a fresh one. */
export async function waitResult(api: ApiClient, taskId: string, deadline: number, maxWaitSeconds: number): Promise<TaskResult> {
  for (;;) {
    const left = Math.floor((deadline - Date.now()) / 1000);
    const r = await readResult(api, taskId, Math.max(0, Math.min(30, left)));
    if (r.status !== 0) return r;
    if (deadline - Date.now() <= 0 || left <= 0)
      throw new CliError("wait_timeout", `task ${taskId} has not finished after ${maxWaitSeconds}s (${fmtTaskStatus(0, r.progress)})`, [], 1, `read it later with \`${cmd(`result ${taskId}`)}\`; see what it printed with \`${cmd(`logs ${taskId}`)}\``);
    await sleep(100);
  }
}

/** The platform's own error in a result (`{"error":{code,message}}`), told apart from a function's body. */
function platformError(body: unknown): { code: string; message: string } | undefined {
  const e = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  return e && typeof e.code === "string" && typeof e.message === "string" ? { code: e.code, message: e.message } : undefined;
}

/** What to do next about a failed task, as a command the user can run. */
function failureHint(r: TaskResult, code: string | undefined): string {
  const logs = `see what it printed with \`${cmd(`logs ${r.id}`)}\``;
  if (code === "no_suitable_node") return `no connected node can run this function (its capabilities ask for more than any node offers, or no node is up); check them with \`${cmd("capabilities <function>")}\``;
  if (r.status === 500) return `the function crashed or its handler failed to load (an import error, a syntax error); ${logs}`;
  if (r.status === 504) return `the function ran past its timeout; raise it with \`${cmd("capabilities <function> --timeout SECONDS")}\`, or ${logs}`;
  return logs;
}

/** Prints a result; returns the exit code: 0 for a 1xx–3xx answer, 1 for 4xx/5xx. */
export function printResult(ctx: Context, r: TaskResult, showHeaders = false): number {
  const shown = showHeaders ? r : { ...r, headers: undefined };
  ctx.out.result(shown, () => {
    ctx.out.note(`task ${r.id}: ${fmtTaskStatus(r.status, r.progress)}${r.contentType ? ` (${r.contentType})` : ""}`);
    if (showHeaders) {
      ctx.out.line(`status: ${r.status}`);
      for (const [k, v] of r.headers ?? []) ctx.out.line(`${k}: ${v}`);
      ctx.out.line();
    }
    const body = typeof r.body === "string" ? r.body : JSON.stringify(r.body, null, 2);
    if (body) ctx.out.stdout.write(body.endsWith("\n") ? body : `${body}\n`);
  });
  if (r.status >= 400) {
    const platform = platformError(r.body);
    const what = platform ? `${platform.code}: ${platform.message}` : `task_failed: task ${r.id} finished with status ${fmtTaskStatus(r.status, r.progress)}`;
    ctx.out.stderr.write(`error: ${what}\nhint: ${failureHint(r, platform?.code)}\n`);
    return 1;
  }
  return 0;
}
