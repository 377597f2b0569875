import { eq } from "drizzle-orm";
import type { Bindings } from "../env.js";
import type { Db } from "../db/client.js";
import type { TaskRow } from "../db/rows.js";
import { tasks } from "../db/schema.js";
import { allShards, functionDispatchers, shardOfTask, shardStub } from "../dispatch/client.js";

/**
 * A task by id, read your own writes (issue 26): its shard (named by the id) first, whose copy is
 * the newest while it holds one (not yet in D1, or finished there first), else D1. A shard out of
 * reach leaves D1 to answer.
 */
export async function findTask(env: Bindings, db: Db, id: string): Promise<TaskRow | undefined> {
  const held = await heldCopy(env, id);
  if (held) return held;
  const [row] = await db.select().from(tasks).where(eq(tasks.id, id));
  return row;
}

/** The shard's copy of a task (the id names its shard), or null; a shard out of reach has none. */
export const heldCopy = (env: Bindings, id: string): Promise<TaskRow | null> =>
  shardStub(env, shardOfTask(env, id))
    .heldTask(id)
    .catch(() => null);

export interface HeldQuery {
  accountId: string;
  functionId?: string | undefined;
  before?: string | undefined;
  limit: number;
}

/**
 * The account's tasks the shards hold, newest first: a function's from its shard, an account's from
 * every shard (one call each, in parallel, answered from memory). A shard out of reach adds none.
 */
export async function heldTasks(env: Bindings, q: HeldQuery): Promise<TaskRow[]> {
  const shards = q.functionId ? functionDispatchers(env, q.functionId) : allShards(env);
  const lists = await Promise.all(shards.map((s) => s.heldTasks(q).catch(() => [] as TaskRow[])));
  return lists.flat();
}

/**
 * D1's page merged with what the shards hold: a shard's copy replaces D1's, the newest `limit`
 * by id (ids sort by creation) are the page, as D1 alone would order it.
 */
export function mergedPage<T extends { id: string }>(fromD1: T[], held: T[], limit: number): T[] {
  const byId = new Map(fromD1.map((r) => [r.id, r]));
  for (const r of held) byId.set(r.id, r);
  return [...byId.values()].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).slice(0, limit);
}
