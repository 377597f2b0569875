import { and, eq, gte, isNull, lt, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { tasks } from "../db/schema.js";
import { idFloor } from "../lib/ids.js";
import { startOfUtcDay } from "../lib/time.js";
import { WEEK_MS } from "../task-history/window.js";
import { archivedOnDay, archivedTotal } from "../task-history/counts.js";
import { archivedIssuedSince } from "../task-history/issue-minutes.js";

/** Whose tasks are counted: an account's, or one of its functions' or endpoints'. */
export type TaskScope = { accountId: string; functionId?: string; endpointId?: string };

export interface TaskCounts {
  /** Issued since 00:00 UTC. */
  today: number;
  /** Issued in the last 7 days. */
  week: number;
  pending: number;
  /** Every task the scope ever had, finished or not. */
  total: number;
}

/**
 * An id's time may run ahead of its task's `issued_at` (a clock that stepped back, a sequence that
 * overflowed; ids.ts) by about a second, never by this: ids from here on hold every task issued since.
 */
const ID_SLACK_MS = 60_000;

/** Leaves these tasks out (one JSON parameter, whatever their number); nothing when there are none. */
const notIn = (ids: string[] | undefined): SQL | undefined =>
  ids?.length ? sql`${tasks.id} not in (select value from json_each(${JSON.stringify(ids)}))` : undefined;

/** Tasks issued at `time` or later, as a range of ids that any index ending in `id` reads, then exactly. */
export const issuedSince = (time: number): SQL => and(gte(tasks.id, idFloor(time - ID_SLACK_MS)), gte(tasks.issuedAt, time))!;

/**
 * The task counters of the metrics routes, in one D1 round trip, each read through an index rather
 * than the scope's every row: issue-time ranges from the index alone through (function, issued_at) or
 * (endpoint, issued_at), and for an account through (account, id), ids beginning with their time;
 * unfinished tasks through the partial index of the account's unfinished tasks (at most its pending
 * cap); the total from an index alone. A scan of a function with millions of tasks read them all
 * before. `week: false` skips the 7-day count, which an account's counts must: only functions and
 * endpoints keep the week's archived issue times.
 * `pendingElsewhere`: tasks whose pending state their shard accounts for, left out of D1's pending count (task-life/held-reads.ts).
 */
export async function taskCounts(db: Db, scope: TaskScope, now = Date.now(), o: { week?: boolean; pendingElsewhere?: string[]; issuedBefore?: number } = {}): Promise<TaskCounts> {
  const of = scope.functionId ? eq(tasks.functionId, scope.functionId) : scope.endpointId ? eq(tasks.endpointId, scope.endpointId) : eq(tasks.accountId, scope.accountId);
  // A function's or an endpoint's issue times are in its index; an account's are read through its ids' time.
  const since = (time: number): SQL => (scope.functionId || scope.endpointId ? gte(tasks.issuedAt, time) : issuedSince(time));
  const count = (where?: SQL, plus?: SQL) => db.select({ n: plus ? sql<number>`count(*) + ${plus}` : sql<number>`count(*)` }).from(tasks).where(and(of, where));
  type Count = ReturnType<typeof count>;
  // Tasks issued since a time of the last week: D1's rows, and the archive's own counts of the
  // tasks the move took: for a function or an endpoint the week's issue times (from any
  // millisecond), for an account its UTC days (from a day's start: its today). An account's week is
  // not kept anywhere, so it is not asked for.
  if (!scope.functionId && !scope.endpointId && o.week !== false) throw new Error("an account's week of tasks is not counted");
  // Tasks issued since the shards began to count them are the shards' to count (held-reads.ts): here
  // only those issued before, which for a function or an endpoint are none once that is a week past,
  // and for an account none from the first day that begins at the accounts' cutover.
  const before = o.issuedBefore ?? Infinity;
  const archivedSince = (time: number) => (scope.functionId || scope.endpointId ? archivedIssuedSince(scope, time, before) : archivedOnDay(scope.accountId, time));
  const issued = (time: number) =>
    time >= before ? undefined : count(Number.isFinite(before) ? and(since(time), lt(tasks.issuedAt, before)) : since(time), archivedSince(time));
  // Archived tasks leave the total's rows (task-history/): a function's or an account's total adds
  // their counts; an endpoint's total, which no route shows, counts D1's rows only.
  const archived = scope.endpointId ? undefined : (archivedTotal(db, scope) as unknown as Count);
  const weekly = o.week === false ? undefined : issued(now - WEEK_MS);
  const counts = [issued(startOfUtcDay(now)), count(and(eq(tasks.accountId, scope.accountId), isNull(tasks.finishedAt), notIn(o.pendingElsewhere))), count(), weekly, archived];
  const asked = counts.filter((c): c is Count => c !== undefined);
  const answers = await db.batch(asked as [Count, ...Count[]]);
  const [today, pending, total, week, archivedTasks] = counts.map((c) => (c ? (answers[asked.indexOf(c)]![0]?.n ?? 0) : 0)) as [number, number, number, number, number];
  return { today, week, pending, total: total + archivedTasks };
}
