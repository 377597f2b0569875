import { sql } from "drizzle-orm";
import { sqlBatch, type Db } from "../db/client.js";
import { accounts, usageTotals } from "../db/schema.js";
import type { ShardMeterView } from "../shard-metering/shard-meters.js";
import { shardUsageOf } from "../shard-metering/statements.js";
import { periodOf, planOf, type Plan } from "./plans.js";
import { beyond, NO_USAGE, plus, type UsageSums } from "../shard-metering/usage-sums.js";

/** What the dispatcher shards hold that D1 has not recorded yet (task-life/held-reads.ts). */
export interface UnrecordedUsage {
  /** Each shard's metering of the period: its sums D1 has committed, and those of outcomes it holds. */
  meters: ShardMeterView[];
  /** Unfinished tasks D1 does not have yet. */
  pending: number;
  /** Tasks whose pending state their shard accounts for (finished there, or counted in `pending`): D1's count leaves them out. */
  pendingElsewhere: string[];
}

export const NOTHING_UNRECORDED: UnrecordedUsage = { meters: [], pending: 0, pendingElsewhere: [] };

/**
 * The current period's usage: D1's sums and, so that a caller sees its own tasks at once, what the
 * shards metered and D1 does not have yet (`unrecorded`). Each shard's sums are read from D1 in the
 * same snapshot as the totals: a shard adds only what it holds beyond D1's row of it, so a batch
 * that reached D1 while the shard still held its outcomes is not counted twice (shard-metering/).
 */
export async function usageOf(db: Db, plans: Plan[], accountId: string, now = Date.now(), unrecorded: UnrecordedUsage = NOTHING_UNRECORDED) {
  const period = periodOf(now);
  const elsewhere = unrecorded.pendingElsewhere.length
    ? sql` and p.id not in (select value from json_each(${JSON.stringify(unrecorded.pendingElsewhere)}))`
    : sql``;
  // Raw statements, so that both go in one batch (one snapshot) when there are shards to weigh.
  const totals = sql`select ${accounts.plan} as plan,
      coalesce(${usageTotals.invocations}, 0) as invocations, coalesce(${usageTotals.durationMs}, 0) as durationMs, coalesce(${usageTotals.mibMs}, 0) as mibMs,
      (select count(*) from tasks p where p.account_id = ${accounts.id} and p.finished_at is null${elsewhere}) as pending
    from ${accounts} left join ${usageTotals} on ${usageTotals.accountId} = ${accounts.id} and ${usageTotals.period} = ${period}
    where ${accounts.id} = ${accountId}`;
  // A shard that holds no outcome adds nothing (D1 has at least what it committed): only the others are weighed.
  const holding = unrecorded.meters.filter((m) => m.held.invocations > 0);
  const [found = [], inD1 = []] = await sqlBatch(db, holding.length ? [totals, shardUsageOf(accountId, period)] : [totals]);
  const row = found[0] as { plan: string; invocations: number; durationMs: number; mibMs: number; pending: number } | undefined;
  const added = addedUsage(holding, inD1 as unknown as ({ shard: string } & UsageSums)[]);
  const plan = planOf(plans, row?.plan ?? "");
  const invocations = (row?.invocations ?? 0) + added.invocations;
  const pending = (row?.pending ?? 0) + unrecorded.pending;
  const mibMs = (row?.mibMs ?? 0) + added.mibMs;
  return {
    period,
    plan: { id: plan.id, description: plan.description, price: plan.price, currency: plan.currency, invocations: plan.invocations },
    invocations,
    // Unfinished tasks have reserved theirs (services/admission.ts): what remains is what can still be issued.
    pending,
    remaining: Math.max(0, plan.invocations - invocations - pending),
    durationMs: (row?.durationMs ?? 0) + added.durationMs,
    gbSeconds: Math.round((mibMs / 1024 / 1000) * 1000) / 1000,
  };
}

/** What each shard metered beyond its row in D1: the sums it sent plus those it holds, less what D1 has. */
function addedUsage(meters: ShardMeterView[], inD1: ({ shard: string } & UsageSums)[]): UsageSums {
  const d1 = new Map(inD1.map((r) => [r.shard, r]));
  return meters.reduce((sum, m) => plus(sum, beyond(plus(m.sent, m.held), d1.get(m.shard) ?? NO_USAGE)), NO_USAGE);
}
