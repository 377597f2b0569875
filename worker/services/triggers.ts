import { and, count, desc, eq, lte } from "drizzle-orm";
import { runBatch, type Db } from "../db/client.js";
import { functions, triggers } from "../db/schema.js";
import { ApiError, notFound, validationFailed } from "../errors.js";
import type { PageRequest } from "../http/paginate.js";
import { given, listPage, saveEdit } from "./records.js";
import { newId } from "../lib/ids.js";
import { iso } from "../lib/time.js";
import type { TriggerCreate, TriggerEdit } from "../../shared/schemas/trigger.js";
import { assertOwnTags, replaceLinks, tagsOf, unlinkRecords } from "./tags.js";
import { getOwnFunction } from "./functions.js";

export async function assertOwnFunctionField(db: Db, accountId: string, field: string, id: string) {
  const [row] = await db.select({ id: functions.id }).from(functions).where(and(eq(functions.id, id), eq(functions.accountId, accountId)));
  if (!row) throw validationFailed([{ field, message: `no function ${id} in this account` }]);
}

/**
 * A function fires at most this many triggers: k self-triggers make k^hops tasks, so fan-out is
 * bounded here and, per chain, when triggers fire (MAX_CHAIN_TASKS in dispatch/chain.ts).
 */
export const MAX_TRIGGERS_PER_FUNCTION = 10;

/**
 * Checked after the insert, so that concurrent creates cannot all pass a check made before: a
 * trigger past the limit in id order (its place among the function's triggers) is taken back.
 */
async function keepWithinLimit(db: Db, functionId: string, id: string) {
  const [row] = await db.select({ n: count() }).from(triggers).where(and(eq(triggers.functionId, functionId), lte(triggers.id, id)));
  if ((row?.n ?? 0) <= MAX_TRIGGERS_PER_FUNCTION) return;
  await runBatch(db, [...unlinkRecords(db, [id]), db.delete(triggers).where(eq(triggers.id, id))]);
  throw new ApiError("conflict", `function ${functionId} already has ${MAX_TRIGGERS_PER_FUNCTION} triggers, the most a function can have: delete one first`);
}

export async function createTrigger(db: Db, accountId: string, input: TriggerCreate): Promise<string> {
  await assertOwnFunctionField(db, accountId, "functionId", input.functionId);
  await assertOwnFunctionField(db, accountId, "nextId", input.nextId);
  await assertOwnTags(db, accountId, input.tag);
  const id = newId();
  await db.batch([
    db.insert(triggers).values({
      id,
      accountId,
      functionId: input.functionId,
      nextId: input.nextId,
      status: input.status,
      includeResult: input.includeResult,
      description: input.description ?? "",
      createdAt: Date.now(),
    }),
    ...replaceLinks(db, id, input.tag ?? []),
  ]);
  await keepWithinLimit(db, input.functionId, id);
  return id;
}

async function getOwnTrigger(db: Db, accountId: string, id: string) {
  const [row] = await db.select().from(triggers).where(and(eq(triggers.id, id), eq(triggers.accountId, accountId)));
  if (!row) throw notFound("trigger");
  return row;
}

type TriggerRow = typeof triggers.$inferSelect;
const triggerOut = (t: TriggerRow, tags: Awaited<ReturnType<typeof tagsOf>>) => ({
  id: t.id,
  functionId: t.functionId,
  nextId: t.nextId,
  tags: tags.get(t.id) ?? [],
  status: t.status,
  includeResult: t.includeResult,
  description: t.description,
  createdAt: iso(t.createdAt),
});

export async function describeTrigger(db: Db, accountId: string, id: string) {
  const t = await getOwnTrigger(db, accountId, id);
  return triggerOut(t, await tagsOf(db, [id]));
}

export async function listTriggers(db: Db, accountId: string, filter: PageRequest & { functionId?: string | undefined }) {
  if (filter.functionId) await getOwnFunction(db, accountId, filter.functionId);
  const where = and(eq(triggers.accountId, accountId), filter.functionId ? eq(triggers.functionId, filter.functionId) : undefined);
  const page = await listPage(db, triggers, where, filter, (limit, offset) => db.select().from(triggers).where(where).orderBy(desc(triggers.id)).limit(limit).offset(offset));
  const tags = await tagsOf(db, page.results.map((r) => r.id));
  return {
    ...page,
    results: page.results.map((r) => {
      const { description: _d, ...item } = triggerOut(r, tags);
      return item;
    }),
  };
}

export async function editTrigger(db: Db, accountId: string, id: string, input: TriggerEdit): Promise<void> {
  await getOwnTrigger(db, accountId, id);
  await assertOwnTags(db, accountId, input.tag);
  const set = given({ status: input.status, includeResult: input.includeResult, description: input.description });
  await saveEdit(db, id, Object.keys(set).length ? db.update(triggers).set(set).where(eq(triggers.id, id)) : undefined, input.tag);
}

export async function deleteTrigger(db: Db, accountId: string, id: string): Promise<void> {
  await getOwnTrigger(db, accountId, id);
  await runBatch(db, [...unlinkRecords(db, [id]), db.delete(triggers).where(eq(triggers.id, id))]);
}
