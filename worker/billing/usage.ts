import { sql } from "drizzle-orm";
import { sqlBatch, type Db } from "../db/client.js";
import { accounts, usageTotals } from "../db/schema.js";
import type { HeldMeter } from "../task-life/held-counts.js";
import { periodOf, planOf, type Plan } from "./plans.js";
import { DEFAULT_BILLED_MEM_MIB } from "./billed-memory.js";

/** What the dispatcher shards hold that D1 has not recorded yet (task-life/held-reads.ts). */
export interface UnrecordedUsage {
  /** Outcomes of the period accepted by a shard, metered as D1 will meter them. */
  meters: HeldMeter[];
  /** Unfinished tasks D1 does not have yet. */
  pending: number;
  /** Tasks whose pending state their shard accounts for (finished there, or counted in `pending`): D1's count leaves them out. */
  pendingElsewhere: string[];
}

export const NOTHING_UNRECORDED: UnrecordedUsage = { meters: [], pending: 0, pendingElsewhere: [] };

/**
 * The current period's usage: D1's sums and, so that a caller sees its own tasks at once, what the
 * shards accepted and D1 has not recorded yet (`unrecorded`). The outcomes are checked against D1
 * in the same batch (one snapshot): one D1 has metered meanwhile is not counted twice, and one whose
 * row D1 already finished otherwise (a deletion's cancellation) will not be metered, so is not.
 */
export async function usageOf(db: Db, plans: Plan[], accountId: string, now = Date.now(), unrecorded: UnrecordedUsage = NOTHING_UNRECORDED) {
  const period = periodOf(now);
  const elsewhere = unrecorded.pendingElsewhere.length
    ? sql` and p.id not in (select value from json_each(${JSON.stringify(unrecorded.pendingElsewhere)}))`
    : sql``;
  // Raw statements, so that both go in one batch (one snapshot) when there are outcomes to check.
  const totals = sql`select ${accounts.plan} as plan,
      coalesce(${usageTotals.invocations}, 0) as invocations, coalesce(${usageTotals.durationMs}, 0) as durationMs, coalesce(${usageTotals.mibMs}, 0) as mibMs,
      (select count(*) from tasks p where p.account_id = ${accounts.id} and p.finished_at is null${elsewhere}) as pending
    from ${accounts} left join ${usageTotals} on ${usageTotals.accountId} = ${accounts.id} and ${usageTotals.period} = ${period}
    where ${accounts.id} = ${accountId}`;
  const ids = JSON.stringify(unrecorded.meters.map((m) => m.taskId));
  // A row D1 finished is metered (the update that finished it did: migrations/0024), or never will be.
  const meters = sql`select j.value as id, t.mem_size as memSize, t.node as node, t.finished_at as finishedAt
    from json_each(${ids}) j left join tasks t on t.id = j.value`;
  const [found = [], inD1 = []] = await sqlBatch(db, unrecorded.meters.length ? [totals, meters] : [totals]);
  const row = found[0] as { plan: string; invocations: number; durationMs: number; mibMs: number; pending: number } | undefined;
  const added = addedUsage(unrecorded.meters, inD1);
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

/** The unrecorded outcomes D1 will meter, as its trigger `tasks_metered` meters them (migrations/0024): a row not yet finished, on a node, memory as asked or the default. */
function addedUsage(meters: HeldMeter[], inD1: Record<string, unknown>[]) {
  const d1 = new Map((inD1 as { id: string; memSize: number | null; node: string | null; finishedAt: number | null }[]).map((r) => [r.id, r]));
  let invocations = 0;
  let durationMs = 0;
  let mibMs = 0;
  for (const m of meters) {
    const t = d1.get(m.taskId);
    if (t?.finishedAt != null) continue;
    if (!(m.node ?? t?.node)) continue;
    const mem = m.memMib ?? (t?.memSize ? t.memSize : DEFAULT_BILLED_MEM_MIB);
    invocations++;
    durationMs += m.durationMs;
    mibMs += m.durationMs * mem;
  }
  return { invocations, durationMs, mibMs };
}
