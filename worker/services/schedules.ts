import { and, desc, eq, sql } from "drizzle-orm";
import type { Bindings } from "../env.js";
import type { Db } from "../db/client.js";
import { schedules } from "../db/schema.js";
import { notFound } from "../errors.js";
import type { PageRequest } from "../http/paginate.js";
import { base64Of } from "../http/task-body.js";
import { newId } from "../lib/ids.js";
import { iso } from "../lib/time.js";
import { schedulePayloadKey } from "../lib/storage-keys.js";
import { given, listPage } from "./records.js";
import { getOwnFunction } from "./functions.js";
import { assertOwnFunctionField } from "./triggers.js";
import { schedulerFor } from "../schedules/client.js";
import type { ScheduleRow } from "../schedules/issue.js";
import { limitReached, limitsOf } from "../limits/account-limits.js";
import { insertWithin } from "../limits/insert-within.js";
import type { ScheduledCreate, ScheduledEdit, ScheduledListFilter } from "../../shared/schemas/scheduled.js";

/** Starts (or restarts, or stops when inactive) the schedule's timer from its row as saved. */
const arm = (env: Bindings, s: Pick<ScheduleRow, "id" | "active" | "cron" | "timezone">) =>
  schedulerFor(env, s.id).arm({ id: s.id, active: s.active, cron: s.cron, timezone: s.timezone });

export async function createSchedule(env: Bindings, db: Db, accountId: string, input: ScheduledCreate, now = Date.now()): Promise<string> {
  // As for a trigger's functions: a function that is not the caller's is a wrong field, not a missing page.
  await assertOwnFunctionField(db, accountId, "functionId", input.functionId);
  const row = { id: newId(), accountId, functionId: input.functionId, active: true, cron: input.cron, timezone: input.timezone, description: input.description ?? "", createdAt: now };
  const limit = (await limitsOf(env, db, accountId)).schedules;
  const held = sql`select count(*) from ${schedules} where ${schedules.accountId} = ${accountId}`;
  if (!(await insertWithin(db, schedules, row, held, limit))) throw limitReached("schedules", limit);
  await arm(env, row);
  return row.id;
}

export async function getOwnSchedule(db: Db, accountId: string, id: string): Promise<ScheduleRow> {
  const [row] = await db.select().from(schedules).where(and(eq(schedules.id, id), eq(schedules.accountId, accountId)));
  if (!row) throw notFound("schedule");
  return row;
}

const scheduleOut = (s: ScheduleRow) => ({ id: s.id, active: s.active, functionId: s.functionId, cron: s.cron, timezone: s.timezone, description: s.description });

export async function describeSchedule(bucket: R2Bucket, db: Db, accountId: string, id: string) {
  const s = await getOwnSchedule(db, accountId, id);
  let inlinePayload: { query: string; body: string; contentType: string | null } | null = null;
  if (s.payloadSetAt != null) {
    const object = await bucket.get(schedulePayloadKey(s.accountId, s.functionId, s.id));
    const body = object ? base64Of(new Uint8Array(await object.arrayBuffer())) : "";
    inlinePayload = { query: s.payloadQuery ?? "", body, contentType: s.payloadContentType };
  }
  return { ...scheduleOut(s), inlinePayload, createdAt: iso(s.createdAt) };
}

export async function listSchedules(db: Db, accountId: string, filter: ScheduledListFilter & PageRequest) {
  if (filter.functionId) await getOwnFunction(db, accountId, filter.functionId);
  const where = and(
    eq(schedules.accountId, accountId),
    filter.functionId ? eq(schedules.functionId, filter.functionId) : undefined,
    filter.timezone ? eq(schedules.timezone, filter.timezone) : undefined,
  );
  const page = await listPage(db, schedules, where, filter, (limit, offset) => db.select().from(schedules).where(where).orderBy(desc(schedules.id)).limit(limit).offset(offset));
  return { ...page, results: page.results.map(scheduleOut) };
}

export async function editSchedule(env: Bindings, db: Db, accountId: string, id: string, input: ScheduledEdit): Promise<void> {
  await getOwnSchedule(db, accountId, id);
  const set = given({ active: input.active, cron: input.cron, timezone: input.timezone, description: input.description });
  const [row] = await db.update(schedules).set(set).where(eq(schedules.id, id)).returning();
  await arm(env, row!);
}

/** Stores the payload: its body's bytes in R2, its query string and Content-Type on the row. */
export async function setPayload(bucket: R2Bucket, db: Db, accountId: string, id: string, p: { body: Uint8Array; query: string; contentType: string | null }, now = Date.now()) {
  const s = await getOwnSchedule(db, accountId, id);
  await bucket.put(schedulePayloadKey(s.accountId, s.functionId, s.id), p.body);
  await db.update(schedules).set({ payloadQuery: p.query, payloadContentType: p.contentType, payloadSetAt: now }).where(eq(schedules.id, id));
}

/** The row goes first: the timer reads it before every run, so the schedule stops at once. */
export async function deleteSchedule(env: Bindings, db: Db, accountId: string, id: string): Promise<void> {
  const s = await getOwnSchedule(db, accountId, id);
  await db.delete(schedules).where(eq(schedules.id, id));
  await schedulerFor(env, id).stop();
  await env.BUCKET.delete(schedulePayloadKey(s.accountId, s.functionId, s.id));
}
