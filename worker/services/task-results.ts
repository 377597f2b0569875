import { z } from "zod";
import type { Db } from "../db/client.js";
import type { TaskRow } from "../db/rows.js";
import type { Bindings } from "../env.js";
import { shardOfTask, shardStub, taskDispatcher } from "../dispatch/client.js";
import { getOwnTask } from "./tasks.js";
import { findTask } from "../task-life/find.js";
import { ApiError } from "../errors.js";

const POLL_MS = 250;

type OwnTaskWait = { row: TaskRow } | { progress: number } | null;

/**
 * A dispatcher's answer, or null after `ms` or if the call fails: a dispatcher reset mid-wait must
 * not hold the request, and a call that loses the race must not leave a rejection unhandled.
 */
function within<T>(call: PromiseLike<T>, ms: number): Promise<T | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), ms)));
  return Promise.race([Promise.resolve(call).catch(() => null), timeout]).finally(() => timer !== undefined && clearTimeout(timer));
}

/**
 * Waits up to `seconds` for the task to finish. The task's dispatcher answers the wait with the
 * row its outcome wrote to D1, so nothing needs reading back. Should the dispatcher be
 * unreachable, or return early without a row (it was evicted and forgot its waiters), the wait
 * falls back to polling D1.
 */
export async function awaitFinished(db: Db, env: Bindings, task: TaskRow, seconds: number): Promise<TaskRow> {
  const deadline = Date.now() + seconds * 1000;
  let t = task;
  while (t.finishedAt == null && Date.now() < deadline) {
    const before = Date.now();
    try {
      // Bounded on this side too: a dispatcher that is reset mid-wait must not hold the request.
      const remaining = deadline - before;
      const answer: PromiseLike<TaskRow | null> = taskDispatcher(env, t).awaitTask(t.id, remaining);
      const row = await within(answer, remaining + 500);
      if (row?.finishedAt != null) return row;
    } catch {
      /* fall through to polling */
    }
    const row = await findTask(env, db, t.id);
    if (!row) break;
    t = row;
    // A wait that returned at once while the task is still open would spin: back off instead.
    if (t.finishedAt == null && Date.now() - before < POLL_MS)
      await new Promise((r) => setTimeout(r, Math.min(POLL_MS, Math.max(0, deadline - Date.now()))));
  }
  return t;
}

/**
 * The result operation. With ?wait, the task's dispatcher (named by the task id) is asked first: it
 * holds every task not yet recorded, answers with the finished row, and so spares the read of D1
 * in the usual case of a reader waiting for a running task. A task it does not hold is read from D1.
 */
export async function readResult(db: Db, env: Bindings, accountId: string, taskId: string, wait: number): Promise<Response> {
  const deadline = Date.now() + wait * 1000;
  if (wait > 0) {
    try {
      const ms = wait * 1000;
      const answer: PromiseLike<OwnTaskWait> = shardStub(env, shardOfTask(env, taskId)).awaitOwnTask(taskId, accountId, ms);
      const here = await within(answer, ms + 500);
      if (here && "row" in here) return resultResponse(env.BUCKET, here.row);
      if (here) return pendingResponse(here.progress);
    } catch {
      /* D1 answers */
    }
  }
  const task = await getOwnTask(env, db, accountId, taskId);
  return resultResponse(env.BUCKET, await awaitFinished(db, env, task, Math.max(0, deadline - Date.now()) / 1000));
}

/** An unfinished task as X-Task-Status names it: running once an agent has it. */
export const openState = (t: TaskRow): "pending" | "running" => (t.assignedAt != null || t.progress > 0 ? "running" : "pending");

/**
 * A public result that is not there yet answers 404, as the original service does: apps written
 * for it poll until the 404 goes away and treat any status but 200, 408 and 500 as an error.
 */
export function resultNotReady(t: TaskRow): ApiError {
  const status = openState(t);
  return new ApiError("result_not_ready", `the task is ${status}; ask again in a moment`, undefined, { "Retry-After": "1", "X-Task-Status": status, ...RESULT_HEADERS });
}

const pendingResponse = (progress: number) => withResultHeaders(Response.json({ status: 0, progress }, { status: 202 }));

/**
 * Every result answer is inert on the service's origin: a function may answer text/html with
 * scripts, and the API's origin is the one the web console shares. `sandbox` gives the document an
 * opaque origin (no scripts, no cookies or storage of ours, no forms); `nosniff` keeps a browser
 * from reading a body as something its Content-Type does not say. No other header of the
 * function's is replayed, so it cannot set cookies or caching rules on the service's origin.
 */
export const RESULT_HEADERS = {
  "X-Content-Type-Options": "nosniff",
  "Content-Security-Policy": "sandbox",
} as const;

function withResultHeaders(res: Response): Response {
  for (const [k, v] of Object.entries(RESULT_HEADERS)) res.headers.set(k, v);
  return res;
}

/**
 * Replays the function's response: its status, Content-Type and body. A task that has not finished
 * answers 202 with its progress; one that ended without a response (cancelled, lost) answers its
 * status with an error body. A recorded status no final HTTP response can carry (1xx: the
 * protocol lets a function report 100–599) answers 502, as a gateway does with an upstream answer it
 * cannot pass on.
 */
export async function resultResponse(bucket: R2Bucket, t: TaskRow): Promise<Response> {
  if (t.finishedAt == null) return pendingResponse(t.progress);
  if (t.purgedAt != null) throw expired("result");
  if (t.resultStatus == null) {
    const code = t.status === 410 ? "task_cancelled" : "no_result";
    const message = t.status === 410 ? "the task was cancelled before it ran" : "the task ended without a response";
    return withResultHeaders(Response.json({ error: { code, message } }, { status: t.status || 500 }));
  }
  if (!finalStatus(t.resultStatus)) {
    console.warn(JSON.stringify({ level: "warn", taskId: t.id, message: `recorded status ${t.resultStatus} cannot be a final response; answered 502` }));
    const message = `the function answered with status ${t.resultStatus}, which is not a final HTTP response`;
    return withResultHeaders(Response.json({ error: { code: "invalid_result_status", message } }, { status: 502 }));
  }
  const headers = new Headers();
  for (const [k, v] of Object.entries(t.resultHeaders ?? {})) if (/^content-type$/i.test(k)) headers.set(k, v);
  let body: BodyInit | null = t.resultBody;
  if (t.resultKey) body = (await bucket.get(t.resultKey))?.body ?? null;
  return withResultHeaders(new Response(nullBodyStatus(t.resultStatus) ? null : body, { status: t.resultStatus, headers }));
}

/** What a Response can be built with (workerd refuses anything else; 101 needs a WebSocket). */
const finalStatus = (s: number) => Number.isInteger(s) && s >= 200 && s <= 599;
const nullBodyStatus = (s: number) => s === 204 || s === 205 || s === 304;

/** A finished task's input, result and log are kept for the retention period (services/retention.ts), then answer 410. */
const expired = (what: string) => new ApiError("expired", `the task's ${what} was deleted after the retention period; the task record remains`);

const storedLog = z.array(z.string());

/** The task's log lines: from the row when small, else from R2 (see dispatch/records.ts); 410 once purged. */
export async function readLog(bucket: R2Bucket, t: TaskRow): Promise<string[]> {
  if (t.purgedAt != null) throw expired("log");
  if (!t.logKey) return t.log ?? [];
  const object = await bucket.get(t.logKey);
  if (!object) throw new ApiError("internal_error", "the task's log is missing from storage");
  return storedLog.parse(await object.json());
}
