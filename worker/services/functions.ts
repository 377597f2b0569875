import { and, desc, eq, inArray, isNull, or, sql, type SQL } from "drizzle-orm";
import { jsonSlices } from "../db/json-slices.js";
import type { Bindings } from "../env.js";
import type { Db } from "../db/client.js";
import { endpoints, functions, tagLinks, tasks, triggers } from "../db/schema.js";
import { notFound } from "../errors.js";
import { newId } from "../lib/ids.js";
import { unixSeconds } from "../lib/time.js";
import { currentTaskCounts } from "../task-life/held-reads.js";
import { CAPABILITY_DEFAULTS, type CapabilitiesSet, type FunctionCreate, type FunctionEdit } from "../../shared/schemas/function.js";
import { TASK_STATUS } from "../../shared/schemas/task.js";
import { assertOwnTags, replaceLinks, tagsOf } from "./tags.js";
import { given, saveEdit } from "./records.js";
import { accountHolds, grantRefused } from "./grants.js";
import type { Grant } from "../dispatch/revoked-grants.js";

import type { FunctionRow } from "../db/rows.js";
export type { FunctionRow };

export async function getOwnFunction(db: Db, accountId: string, id: string): Promise<FunctionRow> {
  const [row] = await db.select().from(functions).where(and(eq(functions.id, id), eq(functions.accountId, accountId))).limit(1);
  if (!row) throw notFound("function");
  return row;
}

export async function createFunction(db: Db, accountId: string, input: FunctionCreate): Promise<string> {
  await assertOwnTags(db, accountId, input.tag);
  const id = newId();
  await db.batch([
    db.insert(functions).values({
      id,
      accountId,
      name: input.name,
      description: input.description ?? "",
      lang: input.lang.toLowerCase(),
      type: input.type.toLowerCase(),
      timeout: CAPABILITY_DEFAULTS.timeout,
      cpuCount: CAPABILITY_DEFAULTS.cpuCount,
      memSize: CAPABILITY_DEFAULTS.memSize,
      privileged: CAPABILITY_DEFAULTS.privileged,
      createdAt: Date.now(),
    }),
    ...replaceLinks(db, id, input.tag ?? []),
  ]);
  return id;
}

export async function editFunction(db: Db, accountId: string, id: string, input: FunctionEdit): Promise<void> {
  await getOwnFunction(db, accountId, id);
  await assertOwnTags(db, accountId, input.tag);
  const set = given({ name: input.name, description: input.description });
  await saveEdit(db, id, Object.keys(set).length ? db.update(functions).set(set).where(eq(functions.id, id)) : undefined, input.tag);
}

export const capabilitiesOf = (f: FunctionRow) => ({
  timeout: f.timeout,
  cpuCount: f.cpuCount,
  memSize: f.memSize,
  networkLatency: CAPABILITY_DEFAULTS.networkLatency,
  privileged: f.privileged,
});

/**
 * Changes one of the caller's functions; when `needs` names a grant, only if the account holds it,
 * checked in the update itself (a revocation cannot slip between). 404 for a function that is not
 * the caller's, else the grant's 403.
 */
export async function updateOwnFunction(db: Db, accountId: string, id: string, set: Partial<FunctionRow>, needs?: Grant): Promise<void> {
  const own = and(eq(functions.id, id), eq(functions.accountId, accountId));
  const where = needs ? and(own, accountHolds(needs)) : own;
  const res = Object.keys(set).length
    ? await db.update(functions).set(set).where(where).returning({ id: functions.id })
    : await db.select({ id: functions.id }).from(functions).where(where);
  if (res.length) return;
  if (needs) await getOwnFunction(db, accountId, id);
  throw needs ? grantRefused(needs) : notFound("function");
}

/** `privileged: true` only for an account the operator granted. */
export async function setCapabilities(db: Db, accountId: string, id: string, input: CapabilitiesSet): Promise<void> {
  const set = given({ timeout: input.timeout, cpuCount: input.cpuCount, memSize: input.memSize, privileged: input.privileged });
  await updateOwnFunction(db, accountId, id, set, input.privileged ? "privileged" : undefined);
}

/** Task counters of the decisions: today = since 00:00 UTC, week = last 7 days. */
export async function functionMetrics(env: Bindings, db: Db, accountId: string, functionId: string, now = Date.now()) {
  const c = await currentTaskCounts(env, db, { accountId, functionId }, now);
  return { todaysTasks: c.today, weekTasks: c.week, pendingTasks: c.pending, completedTasks: c.total - c.pending };
}

export async function describeFunction(env: Bindings, db: Db, accountId: string, id: string) {
  const f = await getOwnFunction(db, accountId, id);
  const [tagMap, metrics] = await Promise.all([tagsOf(db, [id]), functionMetrics(env, db, accountId, id)]);
  return {
    id: f.id,
    name: f.name,
    description: f.description,
    type: f.type,
    lang: f.lang,
    tags: tagMap.get(id) ?? [],
    capabilities: capabilitiesOf(f),
    metrics,
    paused: f.paused,
    createdAt: unixSeconds(f.createdAt),
  };
}

export async function listFunctions(db: Db, accountId: string, tagId?: string) {
  const where = tagId
    ? and(eq(functions.accountId, accountId), inArray(functions.id, db.select({ id: tagLinks.recordId }).from(tagLinks).where(eq(tagLinks.tagId, tagId))))
    : eq(functions.accountId, accountId);
  const rows = await db
    .select({ id: functions.id, name: functions.name, description: functions.description, lang: functions.lang, createdAt: functions.createdAt })
    .from(functions)
    .where(where)
    .orderBy(desc(functions.id));
  const tagMap = await tagsOf(db, rows.map((r) => r.id));
  return rows.map((r) => ({ ...r, tags: tagMap.get(r.id) ?? [], createdAt: unixSeconds(r.createdAt) }));
}

export async function togglePause(db: Db, accountId: string, id: string): Promise<boolean> {
  const [row] = await db
    .update(functions)
    .set({ paused: sql`not ${functions.paused}` })
    .where(and(eq(functions.id, id), eq(functions.accountId, accountId)))
    .returning({ paused: functions.paused });
  if (!row) throw notFound("function");
  return row.paused;
}

/**
 * The tasks a deletion leaves to their shards, as a condition of D1's cancellation: only while their
 * ids fit the statement (one JSON slice, ~2,800 ids; an account's pending cap is 1,000 by default).
 * More, and D1 cancels them all as it did before the shards held tasks.
 */
function heldLeftOut(shardHeld: string[]): SQL | undefined {
  const slices = jsonSlices(shardHeld);
  return slices.length === 1 ? sql`${tasks.id} not in (select value from json_each(${slices[0]!}))` : undefined;
}

/**
 * Deletes a function in one batch: pending tasks are cancelled (410) and kept (but `shardHeld`,
 * the tasks its shards hold, whose end they record: one whose outcome a shard accepted keeps it,
 * and the shard cancels the rest when told after this), tag links of the
 * function and of its triggers and endpoints go, and the foreign keys cascade to triggers (as first
 * or next function), endpoints, schedules (whose timers find their row gone and stop), builds and
 * build logs. Returns nothing to roll back: a batch is atomic. Answers the ids of the endpoints that
 * went with it, read in the same batch (so none created meanwhile is missed), for their doors.
 */
export async function deleteFunction(db: Db, accountId: string, id: string, now = Date.now(), shardHeld: string[] = []): Promise<string[]> {
  await getOwnFunction(db, accountId, id);
  const dependents = or(
    inArray(tagLinks.recordId, db.select({ id: triggers.id }).from(triggers).where(or(eq(triggers.functionId, id), eq(triggers.nextId, id)))),
    inArray(tagLinks.recordId, db.select({ id: endpoints.id }).from(endpoints).where(eq(endpoints.functionId, id))),
    eq(tagLinks.recordId, id),
  );
  const [gone] = await db.batch([
    db.select({ id: endpoints.id }).from(endpoints).where(eq(endpoints.functionId, id)),
    db
      .update(tasks)
      .set({ status: TASK_STATUS.cancelled, progress: 100, finishedAt: now })
      // Through the partial index of the account's unfinished tasks, not every task the function had.
      .where(and(eq(tasks.accountId, accountId), isNull(tasks.finishedAt), eq(tasks.functionId, id), heldLeftOut(shardHeld))),
    db.delete(tagLinks).where(dependents),
    // Functions that named it their dead letter have none now (their shards drop letters to it, worker/retries/).
    db.update(functions).set({ deadLetterFunctionId: null }).where(and(eq(functions.accountId, accountId), eq(functions.deadLetterFunctionId, id))),
    db.delete(functions).where(and(eq(functions.id, id), eq(functions.accountId, accountId))),
  ]);
  return gone.map((e) => e.id);
}
