import { eq } from "drizzle-orm";
import type { Bindings } from "../env.js";
import type { Db } from "../db/client.js";
import type { TaskRow } from "../db/rows.js";
import { tasks } from "../db/schema.js";
import type { ListedTask, ListQuery } from "../shard-history/list-query.js";
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

/**
 * A page of the account's tasks (or a function's) from the shards that make them: a function's
 * shards, or every shard for an account's list, one call each, in parallel; each answers what it
 * holds, keeps and archived (shard-history/listed.ts). A shard out of reach fails the read rather
 * than answer a page short.
 */
export async function shardPages(env: Bindings, q: ListQuery): Promise<ListedTask[]> {
  const shards = q.functionId ? functionDispatchers(env, q.functionId) : allShards(env);
  return (await Promise.all(shards.map((s) => s.listed(q)))).flat();
}
