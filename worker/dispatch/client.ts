import type { Bindings } from "../env.js";
import type { TaskRow } from "../db/rows.js";
import type { BuildRow } from "../db/rows.js";
import type { DispatcherRpc } from "./rpc.js";
import { buildWork, taskWork } from "./work.js";
import { newId } from "../lib/ids.js";
import { groupBy } from "../lib/group-by.js";

/**
 * Dispatch is sharded by function: every build and task of one function goes to one shard (so a
 * function's warm containers and its pause flag live in one place), and every agent connects to
 * every shard. DISPATCH_SHARDS raises the count; 1 is plenty for one object's ~500 writes/s.
 */
export function shardCount(env: Bindings): number {
  const n = Number(env.DISPATCH_SHARDS ?? "1");
  return Number.isInteger(n) && n >= 1 && n <= 256 ? n : 1;
}

function fnv1a(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

export const shardOf = (env: Bindings, functionId: string): number => fnv1a(functionId) % shardCount(env);

/**
 * A new task's id, drawn so that it hashes to its function's shard: a result read then finds the
 * task's dispatcher from the id alone, and can wait there before (usually instead of) reading D1.
 * Each draw takes fresh randomness (about DISPATCH_SHARDS draws a task), so the id keeps at least
 * 80 unpredictable bits however many shards there are.
 */
export function newTaskId(env: Bindings, functionId: string, now = Date.now()): string {
  const shard = shardOf(env, functionId);
  return newId(now, (id) => shardOfTask(env, id) === shard);
}

/** The shard of a task whose id came from newTaskId() (older ids may belong elsewhere). */
export const shardOfTask = (env: Bindings, taskId: string): number => fnv1a(taskId) % shardCount(env);

export const shardStub = (env: Bindings, shard: number): DurableObjectStub<DispatcherRpc> =>
  env.DISPATCHER.get(env.DISPATCHER.idFromName(`shard-${shard}`));

/** Every shard: operator actions on a node reach each, since every agent connects to each. */
export const allShards = (env: Bindings): DurableObjectStub<DispatcherRpc>[] => Array.from({ length: shardCount(env) }, (_, i) => shardStub(env, i));

export const dispatcherFor = (env: Bindings, functionId: string) => shardStub(env, shardOf(env, functionId));

/** Queues tasks on their shards. From inside a dispatcher, its own work is queued directly. */
/** `once`: the tasks are never retried nor dead-lettered (dead letters themselves, worker/retries/). */
export async function enqueueTasks(env: Bindings, tasks: TaskRow[], from?: { id: DurableObjectId; self: DispatcherRpc }, opts: { once?: boolean } = {}) {
  const byShard = groupBy(tasks, (t) => shardOf(env, t.functionId));
  await Promise.all(
    [...byShard].map(([s, shardTasks]) => {
      const work = shardTasks.map(taskWork);
      const stub = shardStub(env, s);
      const once = opts.once ?? false;
      return from && stub.id.equals(from.id) ? from.self.enqueue(work, once) : stub.enqueue(work, once);
    }),
  );
}

export const enqueueBuild = (env: Bindings, b: BuildRow) => dispatcherFor(env, b.functionId).enqueue([buildWork(b)]);
export const setPaused = (env: Bindings, functionId: string, paused: boolean) => dispatcherFor(env, functionId).setPaused(functionId, paused);
export const cancelFunction = (env: Bindings, functionId: string) => dispatcherFor(env, functionId).cancelFunction(functionId);

/** The hourly sweep: every shard fails its waiting tasks that no node seen in the last 24 hours could take. */
export async function sweepUnreachable(env: Bindings): Promise<number> {
  const ended = await Promise.all(allShards(env).map((s) => s.sweepUnreachable()));
  return ended.reduce((a, b) => a + b, 0);
}
export const configChanged = (env: Bindings, functionId: string) => dispatcherFor(env, functionId).configChanged(functionId);
