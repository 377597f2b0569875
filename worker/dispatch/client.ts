import type { Bindings } from "../env.js";
import type { TaskRow } from "../services/tasks.js";
import type { BuildRow } from "../services/builds.js";
import type { Dispatcher } from "./durable-object.js";
import type { NewWork } from "./queue.js";
import { buildWork, taskWork } from "./work.js";

/**
 * Dispatch is sharded by function: every build and task of one function goes to one shard (so a
 * function's warm containers and its pause flag live in one place), and every agent connects to
 * every shard. DISPATCH_SHARDS raises the count; 1 is plenty for one object's ~500 writes/s.
 */
export function shardCount(env: Bindings): number {
  const n = Number(env.DISPATCH_SHARDS ?? "1");
  return Number.isInteger(n) && n >= 1 && n <= 256 ? n : 1;
}

export function shardOf(env: Bindings, functionId: string): number {
  let h = 2166136261;
  for (let i = 0; i < functionId.length; i++) h = Math.imul(h ^ functionId.charCodeAt(i), 16777619);
  return (h >>> 0) % shardCount(env);
}

export const shardStub = (env: Bindings, shard: number): DurableObjectStub<Dispatcher> =>
  env.DISPATCHER.get(env.DISPATCHER.idFromName(`shard-${shard}`));

export const dispatcherFor = (env: Bindings, functionId: string) => shardStub(env, shardOf(env, functionId));

/** Queues tasks on their shards. From inside a dispatcher, its own work is queued directly. */
export async function enqueueTasks(env: Bindings, tasks: TaskRow[], from?: { id: DurableObjectId; self: Dispatcher }) {
  const byShard = new Map<number, NewWork[]>();
  for (const t of tasks) {
    const s = shardOf(env, t.functionId);
    byShard.set(s, [...(byShard.get(s) ?? []), taskWork(t)]);
  }
  await Promise.all(
    [...byShard].map(([s, work]) => {
      const stub = shardStub(env, s);
      return from && stub.id.equals(from.id) ? from.self.enqueue(work) : stub.enqueue(work);
    }),
  );
}

export const enqueueBuild = (env: Bindings, b: BuildRow) => dispatcherFor(env, b.functionId).enqueue([buildWork(b)]);
export const setPaused = (env: Bindings, functionId: string, paused: boolean) => dispatcherFor(env, functionId).setPaused(functionId, paused);
export const cancelFunction = (env: Bindings, functionId: string) => dispatcherFor(env, functionId).cancelFunction(functionId);
