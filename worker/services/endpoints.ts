import { and, desc, eq } from "drizzle-orm";
import type { Bindings } from "../env.js";
import { runBatch, type Db } from "../db/client.js";
import { endpoints } from "../db/schema.js";
import { notFound } from "../errors.js";
import type { PageRequest } from "../http/paginate.js";
import { listPage, saveEdit } from "./records.js";
import { newId } from "../lib/ids.js";
import { iso } from "../lib/time.js";
import { currentTaskCounts } from "../task-life/held-reads.js";
import type { EndpointInput } from "../../shared/schemas/endpoint.js";
import { assertOwnTags, replaceLinks, tagsOf, unlinkRecords } from "./tags.js";
import { getOwnFunction } from "./functions.js";

export type EndpointRow = typeof endpoints.$inferSelect;

export async function getOwnEndpoint(db: Db, accountId: string, id: string): Promise<EndpointRow> {
  const [row] = await db.select().from(endpoints).where(and(eq(endpoints.id, id), eq(endpoints.accountId, accountId)));
  if (!row) throw notFound("endpoint");
  return row;
}

function columnsOf(input: EndpointInput): Partial<EndpointRow> {
  const set: Partial<EndpointRow> = {};
  if (input.description !== undefined) set.description = input.description;
  if (input.dailyLimit !== undefined) set.dailyLimit = input.dailyLimit;
  if (input.origin !== undefined) set.origin = input.origin;
  if (input.ip !== undefined) set.ip = input.ip;
  if (input.timeLimit !== undefined) {
    set.timeFrom = input.timeLimit?.from ?? null;
    set.timeTo = input.timeLimit?.to ?? null;
    set.timezone = input.timeLimit?.timezone ?? null;
  }
  return set;
}

export async function createEndpoint(db: Db, accountId: string, functionId: string, input: EndpointInput): Promise<string> {
  await getOwnFunction(db, accountId, functionId);
  await assertOwnTags(db, accountId, input.tag);
  const id = newId();
  await db.batch([
    db.insert(endpoints).values({ id, accountId, functionId, origin: [], ip: [], createdAt: Date.now(), ...columnsOf(input) }),
    ...replaceLinks(db, id, input.tag ?? []),
  ]);
  return id;
}

export async function editEndpoint(db: Db, accountId: string, id: string, input: EndpointInput): Promise<void> {
  await getOwnEndpoint(db, accountId, id);
  await assertOwnTags(db, accountId, input.tag);
  const set = columnsOf(input);
  await saveEdit(db, id, Object.keys(set).length ? db.update(endpoints).set(set).where(eq(endpoints.id, id)) : undefined, input.tag);
}

export const timeLimitOf = (e: EndpointRow) =>
  e.timeFrom && e.timeTo && e.timezone ? { from: e.timeFrom, to: e.timeTo, timezone: e.timezone } : null;

export async function describeEndpoint(db: Db, accountId: string, id: string) {
  const e = await getOwnEndpoint(db, accountId, id);
  const tags = await tagsOf(db, [id]);
  return {
    id: e.id,
    functionId: e.functionId,
    description: e.description,
    tags: tags.get(id) ?? [],
    dailyLimit: e.dailyLimit,
    origin: e.origin,
    ip: e.ip,
    timeLimit: timeLimitOf(e),
    createdAt: iso(e.createdAt),
  };
}

export async function listEndpoints(db: Db, accountId: string, filter: PageRequest & { functionId?: string | undefined }) {
  if (filter.functionId) await getOwnFunction(db, accountId, filter.functionId);
  const where = and(eq(endpoints.accountId, accountId), filter.functionId ? eq(endpoints.functionId, filter.functionId) : undefined);
  const page = await listPage(db, endpoints, where, filter, (limit, offset) =>
    db
      .select({ id: endpoints.id, functionId: endpoints.functionId, description: endpoints.description, createdAt: endpoints.createdAt })
      .from(endpoints)
      .where(where)
      .orderBy(desc(endpoints.id))
      .limit(limit)
      .offset(offset),
  );
  const tags = await tagsOf(db, page.results.map((r) => r.id));
  return { ...page, results: page.results.map((r) => ({ ...r, tags: tags.get(r.id) ?? [], createdAt: iso(r.createdAt) })) };
}

/** Tasks issued through the endpoint: today (UTC day), pending, last 7 days. */
export async function endpointMetrics(env: Bindings, db: Db, accountId: string, id: string, now = Date.now()) {
  await getOwnEndpoint(db, accountId, id);
  const c = await currentTaskCounts(env, db, { accountId, endpointId: id }, now);
  return { todayTasks: c.today, pendingTasks: c.pending, weekTasks: c.week };
}

export async function deleteEndpoint(db: Db, accountId: string, id: string): Promise<void> {
  await getOwnEndpoint(db, accountId, id);
  await runBatch(db, [...unlinkRecords(db, [id]), db.delete(endpoints).where(eq(endpoints.id, id))]);
}

