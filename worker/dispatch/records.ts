import { and, eq, isNull, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { runBatch, type Db } from "../db/client.js";
import { buildLogs, builds, tasks } from "../db/schema.js";
import { iso } from "../lib/time.js";
import { taskResultKey } from "../lib/storage-keys.js";
import { meterTask } from "../billing/usage.js";
import { triggerCandidates, type TriggerCandidate } from "./chain.js";
import type { Outcome } from "./outcomes.js";
import type { TaskRow } from "../services/tasks.js";
import type { BuildStatus } from "../../shared/schemas/build.js";

/** D1 writes of the dispatcher. Each is conditional, so a late or repeated report changes nothing. */

export interface AssignedMark {
  taskId: string;
  node: string;
  rttMs: number;
  at: number;
}

/** "Assigned" marks for display, many tasks in one batch; a finished task keeps its own values. */
export async function tasksAssigned(db: Db, marks: AssignedMark[]) {
  await runBatch(
    db,
    marks.map((m) =>
      db
        .update(tasks)
        .set({ assignedAt: m.at, node: m.node, networkLatency: Math.round(m.rttMs), progress: 1 })
        .where(and(eq(tasks.id, m.taskId), isNull(tasks.finishedAt))),
    ),
  );
}

/** Results up to this size stay in the D1 row as text; larger or binary ones go to R2. */
const INLINE_RESULT_BYTES = 64 * 1024;

const TIMED_OUT = {
  status: 504,
  resultStatus: 504,
  resultHeaders: { "content-type": "application/json" },
  resultBody: JSON.stringify({ error: { code: "timeout", message: "the task ran past its timeout" } }),
};

/** The columns an outcome sets; a result too large for the row is put in R2 first. */
async function outcomeColumns(bucket: R2Bucket, o: Outcome) {
  const assignment = o.node ? { node: o.node, assignedAt: o.assignedAt ?? o.at, networkLatency: Math.round(o.rttMs) } : {};
  const base = { finishedAt: o.at, progress: 100, ...assignment };
  const r = o.report;
  if (!r) return { ...base, ...TIMED_OUT };
  let resultBody: string | null = null;
  let resultKey: string | null = null;
  if (r.bodyUploaded) resultKey = taskResultKey(o.accountId, o.taskId);
  else if (r.body) {
    const bytes = Uint8Array.from(atob(r.body), (ch) => ch.charCodeAt(0));
    const text = bytes.length <= INLINE_RESULT_BYTES ? utf8(bytes) : undefined;
    if (text !== undefined) resultBody = text;
    else {
      resultKey = taskResultKey(o.accountId, o.taskId);
      await bucket.put(resultKey, bytes);
    }
  }
  return { ...base, status: r.status, resultStatus: r.status, resultHeaders: r.headers, resultBody, resultKey, log: r.log, durationMs: r.durationMs };
}

/**
 * Writes outcomes to D1 in one batch. Each update only matches an unfinished task, so a task is
 * recorded exactly once; it returns the row it finished, metered in the same batch. The batch ends
 * with the triggers of the finished tasks' functions, so chaining costs no further round trip.
 * Returns the rows this write finished (by task id) and those triggers.
 */
export async function outcomesWritten(db: Db, bucket: R2Bucket, outcomes: Outcome[], now: number) {
  const columns = await Promise.all(outcomes.map((o) => outcomeColumns(bucket, o)));
  const writes = outcomes.flatMap((o, i) => [
    db.update(tasks).set(columns[i]!).where(and(eq(tasks.id, o.taskId), isNull(tasks.finishedAt))).returning(),
    meterTask(db, o.taskId, o.at),
  ]);
  const statements: BatchItem<"sqlite">[] = [...writes, triggerCandidates(db, [...new Set(outcomes.map((o) => o.functionId))], now)];
  const results: unknown[] = await db.batch(statements as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
  const finished = new Map<string, TaskRow>();
  for (let i = 0; i < outcomes.length; i++) {
    const [row] = results[2 * i] as TaskRow[];
    if (row) finished.set(row.id, row);
  }
  return { finished, triggers: results[results.length - 1] as TriggerCandidate[] };
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
