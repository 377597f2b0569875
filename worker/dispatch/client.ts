import type { Bindings } from "../env.js";
import type { TaskRow } from "../db/rows.js";
import type { BuildRow } from "../db/rows.js";
import type { DispatcherRpc } from "./rpc.js";
import { buildWork, taskWork } from "./work.js";
import { idTime, newId } from "../lib/ids.js";
import { shardLayouts, shardsAt, shardsInUse } from "./shard-layouts.js";
import { groupBy } from "../lib/group-by.js";

/**
 * Dispatch is sharded by function: every build and task of one function goes to one shard (so a
 * function's warm containers and its pause flag live in one place), and every agent connects to
 * every shard. DISPATCH_SHARDS raises the count; 1 is plenty for one object's ~500 writes/s. It
 * keeps the history of the count (shard-layouts.ts): a task's id names its shard under the layout
 * of its own time, however the count changed since.
 */
const layoutsOf = (env: Bindings) => shardLayouts(env.DISPATCH_SHARDS);

/** Every shard any layout names: agents serve each, and a question about all work asks each. */
export const shardCount = (env: Bindings): number => shardsInUse(layoutsOf(env));

function fnv1a(s: string): number {
  let h = 2166136261;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
  return h >>> 0;
}

/** The function's shard under the layout in force at `at`: where its tasks made then live. */
export const shardOf = (env: Bindings, functionId: string, at = Date.now()): number => fnv1a(functionId) % shardsAt(layoutsOf(env), at);

/**
 * Every shard that may hold work of the function: its shard under each layout (a task queued before
 * a change stays where it was made).
 */
export const shardsOfFunction = (env: Bindings, functionId: string): number[] => [...new Set(layoutsOf(env).map((l) => fnv1a(functionId) % l.shards))];

/**
 * A new task's id, drawn so that it hashes to its function's shard under the layout of the id's own
 * time: a result read then finds the task's dispatcher from the id alone, and can wait there before
 * (usually instead of) reading D1. Each draw takes fresh randomness (about DISPATCH_SHARDS draws a
 * task), so the id keeps at least 80 unpredictable bits however many shards there are.
 */
export function newTaskId(env: Bindings, functionId: string, now = Date.now()): string {
  return newId(now, (id) => shardOfTask(env, id) === shardOf(env, functionId, idTime(id)));
}

/** The shard of a task whose id came from newTaskId() (older ids may belong elsewhere). */
export function shardOfTask(env: Bindings, taskId: string): number {
  const all = layoutsOf(env);
  return fnv1a(taskId) % shardsAt(all, idTime(taskId) ?? Date.now());
}

/**
 * The shard a task of the function lives in: the function's shard at the task's time (its id's),
 * which for an id from newTaskId() is the shard the id names. It is created, queued, awaited and
 * followed there.
 */
export const shardOfFunctionTask = (env: Bindings, functionId: string, taskId: string): number => shardOf(env, functionId, idTime(taskId));
export const taskDispatcher = (env: Bindings, t: { functionId: string; id: string }) => shardStub(env, shardOfFunctionTask(env, t.functionId, t.id));

export const shardStub = (env: Bindings, shard: number): DurableObjectStub<DispatcherRpc> =>
  env.DISPATCHER.get(env.DISPATCHER.idFromName(`shard-${shard}`));

/** Every shard: operator actions on a node reach each, since every agent connects to each. */
export const allShards = (env: Bindings): DurableObjectStub<DispatcherRpc>[] => Array.from({ length: shardCount(env) }, (_, i) => shardStub(env, i));

export const dispatcherFor = (env: Bindings, functionId: string) => shardStub(env, shardOf(env, functionId));

/** Queues tasks on their shards. From inside a dispatcher, its own work is queued directly. */
/** `once`: the tasks are never retried nor dead-lettered (dead letters themselves, worker/retries/). */
export async function enqueueTasks(env: Bindings, tasks: TaskRow[], from?: { id: DurableObjectId; self: DispatcherRpc }, opts: { once?: boolean } = {}) {
  const byShard = groupBy(tasks, (t) => shardOfFunctionTask(env, t.functionId, t.id));
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
/** The function's dispatchers under every layout: each may hold tasks of it made before a change. */
export const functionDispatchers = (env: Bindings, functionId: string) => shardsOfFunction(env, functionId).map((s) => shardStub(env, s));
export const setPaused = async (env: Bindings, functionId: string, paused: boolean) => {
  await Promise.all(functionDispatchers(env, functionId).map((s) => s.setPaused(functionId, paused)));
};
/**
 * The function's tasks its shards hold, whose end (an outcome, or the deletion's own cancellation)
 * the shards record: a function's deletion leaves them out of D1's cancellation. A shard out of
 * reach names none, and D1 cancels its tasks as it always did.
 */
export const heldOfFunction = async (env: Bindings, functionId: string): Promise<string[]> =>
  (await Promise.all(functionDispatchers(env, functionId).map((s) => s.heldOfFunction(functionId).catch(() => [] as string[])))).flat();
export const cancelFunction = async (env: Bindings, functionId: string) => {
  await Promise.all(functionDispatchers(env, functionId).map((s) => s.cancelFunction(functionId)));
};

/** The hourly sweep: every shard fails its waiting tasks that no node seen in the last 24 hours could take. */
export async function sweepUnreachable(env: Bindings): Promise<number> {
  const ended = await Promise.all(allShards(env).map((s) => s.sweepUnreachable()));
  return ended.reduce((a, b) => a + b, 0);
}
export const configChanged = async (env: Bindings, functionId: string) => {
  await Promise.all(functionDispatchers(env, functionId).map((s) => s.configChanged(functionId)));
};
