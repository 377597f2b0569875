import type { Bindings } from "../env.js";
import type { Db } from "../db/client.js";
import { allShards, functionDispatchers } from "../dispatch/client.js";
import type { DispatcherRpc } from "../dispatch/rpc.js";
import { taskCounts, type TaskCounts, type TaskScope } from "../tasks/counts.js";
import { usageOf, type UnrecordedUsage } from "../billing/usage.js";
import { periodOf, type Plan } from "../billing/plans.js";
import { shardsCountAccountDaysFrom, shardsCountIssuesFrom } from "../tasks/issue-counts-from.js";
import { startOfUtcDay } from "../lib/time.js";
import { NO_HELD_COUNTS, type HeldCounts } from "./held-counts.js";
import type { ShardMeterView } from "../shard-metering/shard-meters.js";

/**
 * Aggregates read your own writes (issue 26): D1's answer plus what the shards hold that D1 does
 * not show yet (held-counts.ts). A function's tasks are in its shard; an account's or an endpoint's
 * may be in any. A shard out of reach adds nothing (D1 alone answers, as before), but for the issues
 * the shards count (a function's and an endpoint's today and week since the cutover): those only
 * the shards know, so a shard out of reach fails the read rather than answer counts short.
 *
 * The shards are asked first and D1 after: a batch that reaches D1 in between is then counted
 * twice for a moment in today's, the week's and the total counts (D1 has it, the shard had not
 * marked it yet), never missed. Pending is exact either way: the shard names the tasks it counts
 * as pending and those it finished that D1 still has unfinished, and D1's count leaves both out.
 */
/**
 * A function's tasks, and its counted issues, are in its shard under each layout of DISPATCH_SHARDS
 * (one shard unless the count changed: dispatch/shard-layouts.ts); an endpoint's and an account's
 * in any.
 */
const shardsOf = (env: Bindings, scope: { functionId?: string | undefined }) => (scope.functionId ? functionDispatchers(env, scope.functionId) : allShards(env));

export async function shardCounts(env: Bindings, scope: TaskScope, now: number, countsFrom?: number): Promise<HeldCounts> {
  const asked = (s: DurableObjectStub<DispatcherRpc>) => s.heldCounts(scope, now, countsFrom);
  const all = await Promise.all(shardsOf(env, scope).map((s) => (countsFrom === undefined ? asked(s).catch(() => NO_HELD_COUNTS) : asked(s))));
  return all.reduce((a, b) => ({
    today: a.today + b.today,
    week: a.week + b.week,
    total: a.total + b.total,
    pending: a.pending + b.pending,
    finishedHere: [...a.finishedHere, ...b.finishedHere],
    pendingHere: [...a.pendingHere, ...b.pendingHere],
  }), NO_HELD_COUNTS);
}

/** The accounts' cutover once today begins at or after it (so today is wholly the shards'), else undefined. */
async function accountDayCountsFrom(db: Db, now: number): Promise<number | undefined> {
  const from = await shardsCountAccountDaysFrom(db);
  return from !== undefined && startOfUtcDay(now) >= from ? from : undefined;
}

/** The task counters of the metrics routes (tasks/counts.ts), with the shards' own new and finished tasks. */
export async function currentTaskCounts(env: Bindings, db: Db, scope: TaskScope, now = Date.now(), o: { week?: boolean } = {}): Promise<TaskCounts> {
  // A function's and an endpoint's today and week: the shards count the tasks issued since they
  // began to, D1's rows and the archive's minutes those before (task-history/issue-minutes.ts).
  // An account's today: the shards' count of its issues alone, from a day that begins at or after
  // their cutover (a UTC midnight); the days before, D1's rows and the archive's per-day counts.
  const countsFrom = scope.functionId || scope.endpointId ? await shardsCountIssuesFrom(db) : await accountDayCountsFrom(db, now);
  const held = await shardCounts(env, scope, now, countsFrom);
  const d1 = await taskCounts(db, scope, now, { ...o, pendingElsewhere: [...held.finishedHere, ...held.pendingHere], issuedBefore: countsFrom });
  return { today: d1.today + held.today, week: d1.week + held.week, total: d1.total + held.total, pending: d1.pending + held.pending };
}

/** This period's usage (billing/usage.ts), with what the shards metered that D1 does not have yet. */
export async function currentUsage(env: Bindings, db: Db, plans: Plan[], accountId: string, now = Date.now()) {
  const period = periodOf(now);
  const [counts, meters] = await Promise.all([
    shardCounts(env, { accountId }, now),
    // A shard out of reach adds nothing: D1's totals hold all it sent.
    Promise.all(allShards(env).map((s) => s.meteredHere(accountId, period).catch(() => null))),
  ]);
  const unrecorded: UnrecordedUsage = { meters: meters.filter((m): m is ShardMeterView => m !== null), pending: counts.pending, pendingElsewhere: [...counts.finishedHere, ...counts.pendingHere] };
  return usageOf(db, plans, accountId, now, unrecorded);
}

/** The account's tasks the shards hold and D1 does not have yet, per function and UTC day since `since`. */
export async function shardIssued(env: Bindings, accountId: string, since: number): Promise<{ functionId: string; day: number; count: number }[]> {
  const all = await Promise.all(allShards(env).map((s) => s.heldIssued(accountId, since).catch(() => [])));
  return all.flat();
}
