import { and, eq, gte, isNull, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { tasks } from "../db/schema.js";
import { idFloor } from "../lib/ids.js";
import { DAY_MS, startOfUtcDay } from "../lib/time.js";

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

/** Tasks issued at `time` or later, as a range of ids that any index ending in `id` reads, then exactly. */
export const issuedSince = (time: number): SQL => and(gte(tasks.id, idFloor(time - ID_SLACK_MS)), gte(tasks.issuedAt, time))!;

/**
 * The task counters of the metrics routes, in one D1 round trip, each read through an index rather
 * than the scope's every row: issue-time ranges from the index alone through (function, issued_at) or
 * (endpoint, issued_at), and for an account through (account, id), ids beginning with their time;
 * unfinished tasks through the partial index of the account's unfinished tasks (at most its pending
 * cap); the total from an index alone. A scan of a function with millions of tasks read them all
 * before. `week` is counted only when asked for: an account's is the costliest range to read.
 */
export async function taskCounts(db: Db, scope: TaskScope, now = Date.now(), o: { week?: boolean } = {}): Promise<TaskCounts> {
  const of = scope.functionId ? eq(tasks.functionId, scope.functionId) : scope.endpointId ? eq(tasks.endpointId, scope.endpointId) : eq(tasks.accountId, scope.accountId);
  // A function's or an endpoint's issue times are in its index; an account's are read through its ids' time.
  const since = (time: number): SQL => (scope.functionId || scope.endpointId ? gte(tasks.issuedAt, time) : issuedSince(time));
  const count = (where?: SQL) => db.select({ n: sql<number>`count(*)` }).from(tasks).where(and(of, where));
  const week = o.week ?? true;
  const [[today], [pending], [total], weekRows] = await db.batch([
    count(since(startOfUtcDay(now))),
    db.select({ n: sql<number>`count(*)` }).from(tasks).where(and(eq(tasks.accountId, scope.accountId), isNull(tasks.finishedAt), of)),
    count(),
    // Without it, a count that reads nothing stands in, so the batch keeps its shape.
    week ? count(since(now - 7 * DAY_MS)) : db.select({ n: sql<number>`0` }).from(tasks).where(sql`0`),
  ]);
  return { today: today?.n ?? 0, week: week ? (weekRows[0]?.n ?? 0) : 0, pending: pending?.n ?? 0, total: total?.n ?? 0 };
}
