import { and, desc, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { accounts, builds, tasks } from "../db/schema.js";
import { DAY_MS, startOfUtcDay } from "../lib/time.js";
import { issuedSince } from "../tasks/counts.js";
import { shardIssued } from "../task-life/held-reads.js";
import { ARCHIVED_DAYS_READ, archivedDays } from "../task-history/counts.js";
import type { Bindings } from "../env.js";

/**
 * Read-only aggregates the console shows and the API has no operation for (per-day counts, the
 * last build of many functions at once). Always filtered by the caller's account.
 */

/** The status of each function's newest build. */
export async function lastBuildStatus(db: Db, accountId: string, functionIds: string[]): Promise<Map<string, string>> {
  if (!functionIds.length) return new Map();
  const rows = await db
    .select({ functionId: builds.functionId, status: builds.status })
    .from(builds)
    .where(and(eq(builds.accountId, accountId), inArray(builds.functionId, functionIds)))
    .orderBy(desc(builds.id));
  const out = new Map<string, string>();
  for (const r of rows) if (!out.has(r.functionId)) out.set(r.functionId, r.status);
  return out;
}

/**
 * Tasks issued per UTC day for the last `days` days (oldest first), per function or for the
 * account: D1's, the shards' that D1 does not have yet (asked first: task-life/held-reads.ts), and
 * the archive's per-day counts of what left D1 (task-history/counts.ts).
 */
export async function dailyTasks(env: Bindings, db: Db, accountId: string, days: number, now = Date.now()): Promise<{ byFunction: Map<string, number[]>; total: { day: string; count: number }[] }> {
  // The archive keeps its per-day counts only that long (task-history/counts.ts).
  if (days > ARCHIVED_DAYS_READ) throw new RangeError(`a daily chart of ${days} days is past the ${ARCHIVED_DAYS_READ} the archive keeps`);
  const first = startOfUtcDay(now) - (days - 1) * DAY_MS;
  const held = await shardIssued(env, accountId, first);
  const fromD1 = await db
    .select({
      functionId: tasks.functionId,
      day: sql<number>`(${tasks.issuedAt} - ${first}) / ${DAY_MS}`,
      count: sql<number>`count(*)`,
    })
    .from(tasks)
    .where(and(eq(tasks.accountId, accountId), issuedSince(first)))
    .groupBy(tasks.functionId, sql`2`);
  // After D1's rows: a day moved to the archive in between is counted twice for a moment, never missed.
  const archived = await archivedDays(db, accountId, first);
  const byFunction = new Map<string, number[]>();
  const total = Array.from({ length: days }, (_, i) => ({ day: new Date(first + i * DAY_MS).toISOString().slice(0, 10), count: 0 }));
  for (const r of [...fromD1, ...held, ...archived]) {
    const i = Math.floor(r.day);
    if (i < 0 || i >= days) continue;
    const series = byFunction.get(r.functionId) ?? new Array<number>(days).fill(0);
    series[i] = (series[i] ?? 0) + r.count;
    byFunction.set(r.functionId, series);
    total[i]!.count += r.count;
  }
  return { byFunction, total };
}

/** Whether the operator granted the account network egress (the admin view is the operator's, not the account's). */
export async function egressGranted(db: Db, accountId: string): Promise<boolean> {
  const [row] = await db.select({ egress: accounts.egress }).from(accounts).where(eq(accounts.id, accountId));
  return row?.egress ?? false;
}
