import { sql, type SQL } from "drizzle-orm";
import { chunks } from "../db/client.js";
import type { TaskRow } from "../db/rows.js";
import { issueCountsFrom, taskArchiveMinutes } from "../db/schema.js";
import { jsonSlices } from "../db/json-slices.js";
import { WEEK_MS } from "./window.js";

/**
 * The week's issue times of archived tasks, per function (or endpoint) and minute
 * (task_archive_minutes): what a function's and an endpoint's `todaysTasks` and `weekTasks` add to
 * D1's rows once the records have left D1.
 */

export const MINUTE_MS = 60_000;

/** The start of the minute of `time` (ms since the epoch, which is never negative here). */
export const minuteOf = (time: number) => time - (time % MINUTE_MS);

/**
 * Offsets an entry carries at most: 5,000 of up to 6 bytes each, ~30 KB, well inside a statement's
 * JSON (db/json-slices.ts) however busy the minute. A busier minute gets several entries, which the
 * upsert adds up one after another.
 */
const OFFSETS_AN_ENTRY = 5_000;

type Entry = [minute: number, scope: string, tasks: number, offsets: string];

/** The records issued in the week before `now`, as entries per scope (the function, and the endpoint when there was one) and minute. */
export function issueMinutes(rows: TaskRow[], now: number): Entry[] {
  const by = new Map<string, { scope: string; minute: number; offsets: number[] }>();
  for (const r of rows) {
    if (r.issuedAt < now - WEEK_MS) continue;
    const minute = minuteOf(r.issuedAt);
    for (const scope of r.endpointId ? [r.functionId, r.endpointId] : [r.functionId]) {
      const key = `${scope} ${minute}`;
      const m = by.get(key) ?? { scope, minute, offsets: [] };
      m.offsets.push(r.issuedAt - minute);
      by.set(key, m);
    }
  }
  const entries: Entry[] = [];
  for (const { scope, minute, offsets } of by.values())
    for (const part of chunks(offsets, OFFSETS_AN_ENTRY)) entries.push([minute, scope, part.length, part.join(",")]);
  return entries;
}

/** Minutes of issue from this one on are the shards' to count (issue_counts_from, a whole minute); none before its row exists. */
const shardsCountFrom = sql`coalesce((select ${issueCountsFrom.fromMs} from ${issueCountsFrom}), 9e15)`;

/**
 * The statements of a move's batch that add these records' issue times of the week (one JSON
 * parameter each): only the minutes before the shards began to count (the cutover row, read in the
 * same statement), which are a week past within a week of it.
 */
export const issueMinutesAdded = (rows: TaskRow[], now: number): SQL[] =>
  jsonSlices(issueMinutes(rows, now)).map(
    (json) => sql`insert into ${taskArchiveMinutes} (minute, scope, tasks, offsets)
      select json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'), json_extract(value, '$[3]') from json_each(${json})
      where json_extract(value, '$[0]') < ${shardsCountFrom}
      on conflict (minute, scope) do update set tasks = tasks + excluded.tasks, offsets = offsets || ',' || excluded.offsets`,
  );

/**
 * A function's or an endpoint's archived tasks issued at `time` or later, for `time` within the last
 * week: a scalar subquery that D1's count of its rows adds, so that one statement, one view of D1,
 * counts a moving task once. The minutes after the one `time` falls in count by their totals (an
 * entry of the covering index each), that minute by its offsets: exact to the millisecond. (The
 * one-a-task rows kept before the minutes were folded into them by migration 0029.) `before`: only
 * the minutes before it, when the shards count the tasks issued since.
 */
export const archivedIssuedSince = (scope: { functionId?: string | undefined; endpointId?: string | undefined }, time: number, before = Infinity): SQL => {
  const id = scope.functionId ?? scope.endpointId ?? "";
  const minute = minuteOf(time);
  // `before` is a whole minute (issue_counts_from): minutes before it are wholly before it.
  const until = Number.isFinite(before) ? sql` and ${taskArchiveMinutes.minute} < ${before}` : sql``;
  return sql`(coalesce((select sum(${taskArchiveMinutes.tasks}) from ${taskArchiveMinutes} where ${taskArchiveMinutes.scope} = ${id} and ${taskArchiveMinutes.minute} > ${minute}${until}), 0)
    + coalesce((select (select count(*) from json_each('[' || ${taskArchiveMinutes.offsets} || ']') where value >= ${time - minute})
        from ${taskArchiveMinutes} where ${taskArchiveMinutes.scope} = ${id} and ${taskArchiveMinutes.minute} = ${minute}), 0))`;
};
