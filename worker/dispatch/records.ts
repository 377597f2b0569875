import { and, eq, isNull, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { buildLogs, builds, tasks } from "../db/schema.js";
import { iso } from "../lib/time.js";
import { taskResultKey } from "../lib/storage-keys.js";
import { meterTask } from "../billing/usage.js";
import type { BuildStatus } from "../../shared/schemas/build.js";
import type { AgentMessage } from "../../shared/protocol/messages.js";

/** D1 writes of the dispatcher. Each is conditional, so a late or repeated report changes nothing. */

export async function taskAssigned(db: Db, taskId: string, node: string, rttMs: number, now: number) {
  await db
    .update(tasks)
    .set({ assignedAt: now, node, networkLatency: Math.round(rttMs), progress: 1 })
    .where(and(eq(tasks.id, taskId), isNull(tasks.finishedAt)));
}

/** Results up to this size stay in the D1 row as text; larger or binary ones go to R2. */
const INLINE_RESULT_BYTES = 64 * 1024;

type TaskDone = Extract<AgentMessage, { type: "task.done" }>;

/**
 * Records a task's outcome exactly once: the update only matches an unfinished task, so whichever
 * report arrives first wins and the row it returns tells the caller to fire triggers.
 */
export async function taskFinished(db: Db, bucket: R2Bucket, accountId: string, msg: TaskDone, now: number) {
  let resultBody: string | null = null;
  let resultKey: string | null = null;
  if (msg.bodyUploaded) resultKey = taskResultKey(accountId, msg.taskId);
  else if (msg.body) {
    const bytes = Uint8Array.from(atob(msg.body), (ch) => ch.charCodeAt(0));
    const text = bytes.length <= INLINE_RESULT_BYTES ? utf8(bytes) : undefined;
    if (text !== undefined) resultBody = text;
    else {
      resultKey = taskResultKey(accountId, msg.taskId);
      await bucket.put(resultKey, bytes);
    }
  }
  const [[row]] = await db.batch([
    db
      .update(tasks)
      .set({
        finishedAt: now,
        progress: 100,
        status: msg.status,
        resultStatus: msg.status,
        resultHeaders: msg.headers,
        resultBody,
        resultKey,
        log: msg.log,
        durationMs: msg.durationMs,
      })
      .where(and(eq(tasks.id, msg.taskId), isNull(tasks.finishedAt)))
      .returning(),
    meterTask(db, msg.taskId, now),
  ]);
  return row;
}

/** The dispatcher's own verdict when no agent answered in time. */
export async function taskTimedOut(db: Db, taskId: string, now: number) {
  const [[row]] = await db.batch([
    db
      .update(tasks)
      .set({ finishedAt: now, progress: 100, status: 504, resultStatus: 504, resultHeaders: { "content-type": "application/json" }, resultBody: JSON.stringify({ error: { code: "timeout", message: "the task ran past its timeout" } }) })
      .where(and(eq(tasks.id, taskId), isNull(tasks.finishedAt)))
      .returning(),
    meterTask(db, taskId, now),
  ]);
  return row;
}

function utf8(bytes: Uint8Array): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true, ignoreBOM: true }).decode(bytes);
  } catch {
    return undefined;
  }
}

/** Moves a build to a new status and appends it to the timeline, unless it already ended. */
export async function buildMoved(db: Db, buildId: string, status: BuildStatus, now: number, artifactKey?: string) {
  await db
    .update(builds)
    .set({
      status,
      timeline: sql`json_insert(${builds.timeline}, '$[#]', json_object('status', ${status}, 'time', ${iso(now)}))`,
      ...(artifactKey ? { artifactKey } : {}),
    })
    .where(and(eq(builds.id, buildId), sql`${builds.status} in ('PENDING', 'BUILDING')`, status === "BUILDING" ? eq(builds.status, "PENDING") : undefined));
}

export async function buildLogged(db: Db, buildId: string, firstSeq: number, lines: string[]) {
  // 3 parameters a row and 100 a statement: 30 rows an insert.
  for (let i = 0; i < lines.length; i += 30) {
    const part = lines.slice(i, i + 30).map((line, j) => ({ buildId, seq: firstSeq + i + j, line }));
    await db.insert(buildLogs).values(part).onConflictDoNothing();
  }
}

/**
 * Lines of the dispatcher's own (a failure reason) are numbered from DISPATCHER_LINES_FROM, apart
 * from the agent's numbering: an agent batch still being written can never collide with them, and
 * they sort after every line the agent sent.
 */
const DISPATCHER_LINES_FROM = 1_000_000_000;

export async function buildLineAppended(db: Db, buildId: string, line: string) {
  await db.run(
    sql`insert into ${buildLogs} (build_id, seq, line) select ${buildId}, max(coalesce(max(seq), 0) + 1, ${DISPATCHER_LINES_FROM}), ${line} from ${buildLogs} where build_id = ${buildId}`,
  );
}
