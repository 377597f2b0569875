import { sql, type SQL } from "drizzle-orm";
import { sqlBatch, type Db } from "../db/client.js";
import { jsonSlices } from "../db/json-slices.js";
import { issueCountsFrom, tasks, taskArchiveChains, taskArchiveCounts, taskArchiveTotals } from "../db/schema.js";
import { DAY_MS } from "../lib/time.js";
import { archivedDaysPruned } from "../task-history/counts.js";

/** A record the shard archived, as the release names it: its id, and whether the shard's copy is purged. */
export interface Released {
  id: string;
  accountId: string;
  purged: boolean;
}

/**
 * The rows of D1's `tasks` that these records may take out of D1, matched in SQL: there, finished,
 * purged exactly as the shard's copy is (a row purged in D1 since the shard read it stays, for D1's
 * own move, rather than lose its purge under the shard's unpurged copy), and issued since the shards
 * count issues (issue_counts_from: a task issued before it needs its issue time in D1's minutes,
 * which D1's move keeps).
 */
const matched = (json: string): SQL => sql`from ${tasks} t join json_each(${json}) j on t.id = json_extract(j.value, '$[0]')
  where t.finished_at is not null and (t.purged_at is null) = json_extract(j.value, '$[1]')
  and t.issued_at >= coalesce((select ${issueCountsFrom.fromMs} from ${issueCountsFrom}), 9e15)`;

/**
 * Takes D1's rows of records its shard has archived out of D1 (step 5 of docs/dispatch.md), in one
 * batch: each count D1's move keeps for a moved record (a function's total, its day of issue, its
 * chain's size) grows by the rows matched, and those rows go. The counts come from the rows
 * themselves, in the statement that reads them, so the batch sent again (its answer lost) finds no
 * row and counts nothing, and a row D1's move took meanwhile is counted by that move alone. The
 * accounts' per-day counts older than any chart reads go, as D1's move prunes them.
 */
export async function releaseFromD1(db: Db, records: Released[], now: number): Promise<void> {
  if (!records.length) return;
  const statements = jsonSlices(records.map((r) => [r.id, r.purged ? 0 : 1])).flatMap((json) => {
    const rows = matched(json);
    return [
      sql`insert into ${taskArchiveTotals} (account_id, function_id, tasks)
        select t.account_id, t.function_id, count(*) ${rows} group by t.account_id, t.function_id
        on conflict (account_id, function_id) do update set tasks = tasks + excluded.tasks`,
      sql`insert into ${taskArchiveCounts} (account_id, function_id, day, tasks)
        select t.account_id, t.function_id, t.issued_at - t.issued_at % ${DAY_MS}, count(*) ${rows} group by 1, 2, 3
        on conflict (account_id, function_id, day) do update set tasks = tasks + excluded.tasks`,
      sql`insert into ${taskArchiveChains} (chain_id, account_id, tasks)
        select t.chain_id, t.account_id, count(*) ${rows} and t.chain_id is not null group by t.chain_id, t.account_id
        on conflict (chain_id) do update set tasks = tasks + excluded.tasks`,
      sql`delete from ${tasks} where id in (select t.id ${rows})`,
    ];
  });
  await sqlBatch(db, [...statements, ...archivedDaysPruned(records.map((r) => r.accountId), now)]);
}
