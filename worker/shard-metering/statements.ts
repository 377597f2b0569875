import { sql, type SQL } from "drizzle-orm";
import type { UsageSums } from "./usage-sums.js";

/** One shard's absolute sums of one account's period, as `shardUsageFloors` sends them. */
export interface ShardUsageRow extends UsageSums {
  accountId: string;
  period: string;
}

/**
 * Raises the shard's rows of `shard_usage` to these sums, all in one statement (one JSON parameter):
 * each column the max of what D1 has and what arrives, so a batch sent again changes nothing, and
 * the table's triggers add only the growth to usage_totals (migrations/0034). Rows are inserted from
 * the account's own row: an account deleted meanwhile gets none rather than a failing foreign key.
 */
export function shardUsageFloors(shard: string, rows: ShardUsageRow[]): SQL {
  const json = JSON.stringify(rows.map((r) => [r.accountId, r.period, r.invocations, r.durationMs, r.mibMs]));
  return sql`insert into shard_usage (account_id, period, shard, invocations, duration_ms, mib_ms)
    select a.id, json_extract(j.value, '$[1]'), ${shard}, json_extract(j.value, '$[2]'), json_extract(j.value, '$[3]'), json_extract(j.value, '$[4]')
    from json_each(${json}) j join accounts a on a.id = json_extract(j.value, '$[0]') where true
    on conflict (account_id, period, shard) do update set
      invocations = max(shard_usage.invocations, excluded.invocations),
      duration_ms = max(shard_usage.duration_ms, excluded.duration_ms),
      mib_ms = max(shard_usage.mib_ms, excluded.mib_ms)`;
}

/**
 * A shard's batch holds a row of `metering_in_shard` from before its outcomes' update to after it:
 * the update's trigger then meters none of them, which the shard meters itself (migrations/0034).
 */
export const meteringInShardOn = sql`insert or replace into metering_in_shard (batch) values (1)`;
export const meteringInShardOff = sql`delete from metering_in_shard`;

/** The shards' sums of an account's period as D1 has them, by shard. */
export const shardUsageOf = (accountId: string, period: string) =>
  sql`select shard, invocations, duration_ms as durationMs, mib_ms as mibMs from shard_usage where account_id = ${accountId} and period = ${period}`;
