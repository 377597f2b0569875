import { utf8OrUndefined } from "../http/validate.js";
import { and, eq, sql, type SQL } from "drizzle-orm";
import { rowOf, sqlBatch, type Db } from "../db/client.js";
import { builds, tasks } from "../db/schema.js";
import { iso } from "../lib/time.js";
import { taskLogKey, taskResultKey } from "../lib/storage-keys.js";
import { triggerCandidate, triggerCandidates } from "./chain.js";
import type { Outcome } from "./outcomes.js";
import type { TaskRow } from "../db/rows.js";
import type { BuildStatus } from "../../shared/schemas/build.js";
import { prependEarlier, TIMED_OUT_LINE, withEarlier } from "../retries/attempt-log.js";
import { meteringInShardOff, meteringInShardOn } from "../shard-metering/statements.js";

/** D1 writes of the dispatcher. Each is conditional, so a late or repeated report changes nothing. */

export interface AssignedMark {
  taskId: string;
  node: string;
  rttMs: number;
  at: number;
}

/** "Assigned" marks for display, any number in one statement; a finished task keeps its own values. */
export async function tasksAssigned(db: Db, marks: AssignedMark[]) {
  if (!marks.length) return;
  const json = JSON.stringify(marks.map((m) => ({ id: m.taskId, node: m.node, assignedAt: m.at, rtt: Math.round(m.rttMs) })));
  await sqlBatch(db, [
    sql`update tasks set assigned_at = o.assigned_at, node = o.node, network_latency = o.rtt, progress = 1
      from ${outcomeRows(json)} as o
      where tasks.id = o.id and tasks.finished_at is null`,
  ]);
}

/**
 * Results (text) and logs (as JSON) up to this size stay in the D1 row; larger ones, and binary
 * results, go to R2. Outcomes are written on every task, and each R2 put is an operation billed
 * and a round trip the group commit waits for before its D1 batch; most responses and logs are a
 * few hundred bytes, so the usual task costs no put, while no row carries more than a few KiB of
 * them (the retention sweep then clears what is left, services/retention.ts).
 */
export const INLINE_RESULT_BYTES = 4 * 1024;
export const INLINE_LOG_BYTES = 4 * 1024;

const TIMED_OUT = {
  status: 504,
  headers: { "content-type": "application/json" },
  body: JSON.stringify({ error: { code: "timeout", message: "the task ran past its timeout" } }),
};

/** One outcome as the JSON element the statements below read; a result too large for the row is put in R2 first. */
export async function outcomeElement(bucket: R2Bucket, o: Outcome) {
  const common = {
    id: o.taskId, at: o.at, node: o.node, assignedAt: o.node ? (o.assignedAt ?? o.at) : null, rtt: o.node ? Math.round(o.rttMs) : null,
    attempts: o.attempts ?? (o.node ? 1 : 0),
  };
  const r = o.report;
  if (!r) return { ...common, ...TIMED_OUT, key: null, log: o.earlier?.length ? withEarlier(o.earlier, o.attempts!, [TIMED_OUT_LINE]) : null, logKey: null, durationMs: null };
  let body: string | null = null;
  let key: string | null = null;
  if (r.bodyUploaded) key = taskResultKey(o.accountId, o.taskId);
  else if (r.body) {
    const bytes = Uint8Array.from(atob(r.body), (ch) => ch.charCodeAt(0));
    const text = bytes.length <= INLINE_RESULT_BYTES ? utf8OrUndefined(bytes, true) : undefined;
    if (text !== undefined) body = text;
    else {
      key = taskResultKey(o.accountId, o.taskId);
      await bucket.put(key, bytes);
    }
  }
  // An uploaded log is already in R2 under the task's log key; a large inline one is put there.
  // A retried task's log holds every attempt's lines (worker/retries/attempt-log.ts).
  let log: string[] | null = o.earlier?.length && !r.logUploaded ? withEarlier(o.earlier, o.attempts!, r.log) : r.log;
  let logKey: string | null = r.logUploaded ? taskLogKey(o.accountId, o.taskId) : null;
  if (logKey && o.earlier?.length) await prependEarlier(bucket, logKey, o.earlier, o.attempts!);
  const logJson = r.logUploaded ? "" : JSON.stringify(log);
  if (!r.logUploaded && logJson.length > INLINE_LOG_BYTES) {
    logKey = taskLogKey(o.accountId, o.taskId);
    await bucket.put(logKey, logJson, { httpMetadata: { contentType: "application/json" } });
    log = null;
  }
  if (r.logUploaded) log = null;
  return { ...common, status: r.status, headers: r.headers, body, key, log, logKey, durationMs: r.durationMs, runtime: r.runtime ?? null };
}

/** Outcomes (or assigned marks) as rows: one JSON parameter, whatever their number; absent keys read NULL. */
const outcomeRows = (json: string) => sql`(select
  json_extract(value, '$.id') as id, json_extract(value, '$.at') as at,
  json_extract(value, '$.status') as status, json_extract(value, '$.headers') as headers,
  json_extract(value, '$.body') as body, json_extract(value, '$.key') as result_key, json_extract(value, '$.log') as log, json_extract(value, '$.logKey') as log_key,
  json_extract(value, '$.durationMs') as duration_ms, json_extract(value, '$.node') as node,
  json_extract(value, '$.assignedAt') as assigned_at, json_extract(value, '$.rtt') as rtt,
  json_extract(value, '$.runtime') as runtime, json_extract(value, '$.attempts') as attempts
  from json_each(${json}))`;

/** An outcome as the JSON element the batch statements read (outcomeElement). */
export type OutcomeElement = Awaited<ReturnType<typeof outcomeElement>>;

/** What a batch writes before its outcomes: the shard's new task rows (task-life/), and outcomes already made (or being made) elements. */
export interface Before {
  rows?: SQL[];
  elements?: Map<string, Promise<OutcomeElement>>;
  /** Statements that must commit with these outcomes, after them (the shard's lease settlements and its meters). */
  after?: SQL[];
  /**
   * The outcomes the shard meters itself (shard-metering/): their update meters nothing in D1. The
   * rest (tasks the shard does not hold) are metered by the update, as before migration 0034.
   */
  meteredHere?: Set<string>;
  /**
   * The finished row of a task the shard holds, built from its created row and the outcome
   * (task-life/finished-row.ts): D1 then only says which outcomes finished their rows, by id, and
   * sends no row back. Undefined for a task the shard does not hold: its row is read back whole.
   */
  finishedOf?: (e: OutcomeElement) => TaskRow | undefined;
  /**
   * Tasks D1 has no row of (task-life/held-tasks.ts, rowless): their outcomes are neither updated
   * nor read back; each finished its task when `finishedOf` builds its row.
   */
  rowless?: Set<string>;
}

/** The update that finishes every task of these outcomes still unfinished (see outcomesWritten). */
const finishing = (json: string) => sql`update tasks set
      finished_at = o.at, progress = 100, status = o.status, result_status = o.status, result_headers = o.headers,
      result_body = o.body, result_key = o.result_key, log = o.log, log_key = o.log_key, duration_ms = o.duration_ms,
      node = coalesce(o.node, tasks.node), assigned_at = coalesce(o.assigned_at, tasks.assigned_at),
      network_latency = coalesce(o.rtt, tasks.network_latency), runtime = coalesce(o.runtime, tasks.runtime),
      attempts = coalesce(o.attempts, tasks.attempts)
      from ${outcomeRows(json)} as o
      where tasks.id = o.id and tasks.finished_at is null`;

/** The updates of a batch's outcomes: those the shard meters inside `metering_in_shard`'s row, the others outside it. */
function finishingUpdates(elements: OutcomeElement[], here: Set<string> | undefined): SQL[] {
  const inShard = here ? elements.filter((e) => here.has(e.id)) : [];
  const byD1 = here ? elements.filter((e) => !here.has(e.id)) : elements;
  return [
    ...(inShard.length ? [meteringInShardOn, finishing(JSON.stringify(inShard)), meteringInShardOff] : []),
    ...(byD1.length ? [finishing(JSON.stringify(byD1))] : []),
  ];
}

/**
 * Writes outcomes to D1 in one batch of a few statements, however many outcomes there are (their
 * text never changes, so nothing is rebuilt per task):
 * - one update finishes every task still unfinished, so each is recorded exactly once; an
 *   outcome of an unassigned-looking row brings its assignment. Outcomes the shard meters itself
 *   (`meteredHere`, shard-metering/) are updated between the statements that set and clear
 *   `metering_in_shard`, and meter nothing in D1. Any other outcome is metered by the statement
 *   that finishes its row (the trigger `tasks_metered`, migrations/0024: not cancelled, and run on
 *   a node, so a task the dispatcher ended before any node had it, such as one no node could take,
 *   costs nothing), in an update of their own; a row already finished is neither updated nor
 *   metered again;
 * - one query reads back which rows these outcomes finished, now or in an earlier write of the same
 *   batch whose answer was lost (D1 committed it, the connection dropped before the reply): a
 *   retry then still wakes the readers and fires the triggers the first write never got to. Of a
 *   task the shard holds (`finishedOf`) only the id comes back: the shard has the row; of any other
 *   (a second query) the whole row;
 * - one query reads the triggers of their functions, so chaining costs no further round trip.
 * An outcome of a rowless task (`rowless`) is in neither the update nor the read back: the row
 * `finishedOf` builds is its finished row, and the batch carries only what `after` adds for it.
 * Returns the rows these outcomes finished (by task id) and those triggers.
 */
export async function outcomesWritten(db: Db, bucket: R2Bucket, outcomes: Outcome[], now: number, before: Before = {}) {
  const finished = new Map<string, TaskRow>();
  const rows = before.rows ?? [];
  if (!outcomes.length) {
    if (rows.length || before.after?.length) await sqlBatch(db, [...rows, ...(before.after ?? [])]);
    return { finished, triggers: [] };
  }
  const elements = await Promise.all(outcomes.map((o) => before.elements?.get(o.taskId) ?? outcomeElement(bucket, o)));
  const built = new Map<string, TaskRow>();
  for (const e of elements) {
    const row = before.finishedOf?.(e);
    if (row) built.set(e.id, row);
    if (row && before.rowless?.has(e.id)) finished.set(e.id, row);
  }
  // Reading back needs no results or logs: its copy of the batch leaves them out.
  const finishedBy = (of: OutcomeElement[]) => outcomeRows(JSON.stringify(of.map(({ id, at }) => ({ id, at }))));
  const inD1 = elements.filter((e) => !before.rowless?.has(e.id));
  const byId = inD1.filter((e) => built.has(e.id));
  const whole = inD1.filter((e) => !built.has(e.id));
  const updates = inD1.length ? finishingUpdates(inD1, before.meteredHere) : [];
  // Finished by this outcome (its time), not by a cancellation or another report in between.
  const reads = [
    ...(byId.length ? [sql`select tasks.id as id from tasks join ${finishedBy(byId)} as o on tasks.id = o.id and tasks.finished_at = o.at`] : []),
    ...(whole.length ? [sql`select tasks.* from tasks join ${finishedBy(whole)} as o on tasks.id = o.id and tasks.finished_at = o.at`] : []),
  ];
  const results = await sqlBatch(db, [
    ...rows,
    ...updates,
    ...reads,
    triggerCandidates([...new Set(outcomes.map((o) => o.functionId))]),
    ...(before.after ?? []),
  ]);
  const answers = results.slice(rows.length + updates.length);
  const ids = byId.length ? answers.shift()! : [];
  const read = whole.length ? answers.shift()! : [];
  const triggers = answers[0]!;
  for (const { id } of ids as { id: string }[]) finished.set(id, built.get(id)!);
  for (const raw of read) {
    const row = rowOf(tasks, raw);
    finished.set(row.id, row);
  }
  return { finished, triggers: triggers.map(triggerCandidate) };
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
