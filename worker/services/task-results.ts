import { eq } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { tasks } from "../db/schema.js";
import type { TaskRow } from "./tasks.js";

const POLL_MS = 200;

/** Waits up to `seconds` for the task to finish, re-reading its row. */
export async function awaitFinished(db: Db, task: TaskRow, seconds: number): Promise<TaskRow> {
  const deadline = Date.now() + seconds * 1000;
  let t = task;
  while (t.finishedAt == null && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, Math.min(POLL_MS, deadline - Date.now())));
    const [row] = await db.select().from(tasks).where(eq(tasks.id, t.id));
    if (!row) break;
    t = row;
  }
  return t;
}

/**
 * Replays the function's response: its status, Content-Type and body. A task that has not finished
 * answers 202 with its progress; one that ended without a response (cancelled, lost) answers its
 * status with an error body.
 */
export async function resultResponse(bucket: R2Bucket, t: TaskRow): Promise<Response> {
  if (t.finishedAt == null) return Response.json({ status: 0, progress: t.progress }, { status: 202 });
  if (t.resultStatus == null) {
    const code = t.status === 410 ? "task_cancelled" : "no_result";
    const message = t.status === 410 ? "the task was cancelled before it ran" : "the task ended without a response";
    return Response.json({ error: { code, message } }, { status: t.status || 500 });
  }
  const headers = new Headers();
  for (const [k, v] of Object.entries(t.resultHeaders ?? {})) if (/^content-type$/i.test(k)) headers.set(k, v);
  let body: BodyInit | null = t.resultBody;
  if (t.resultKey) body = (await bucket.get(t.resultKey))?.body ?? null;
  return new Response(nullBodyStatus(t.resultStatus) ? null : body, { status: t.resultStatus, headers });
}

const nullBodyStatus = (s: number) => s === 101 || s === 204 || s === 205 || s === 304;
