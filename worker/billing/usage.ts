import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { accounts, usageTotals } from "../db/schema.js";
import { periodOf, planOf, type Plan } from "./plans.js";

/**
 * Memory billed for a task that asked for the node's default (memSize 0). Tasks are metered (one
 * usage row each, keyed by task id, cancelled ones not) in the batch that records their outcomes:
 * see outcomesWritten() in dispatch/records.ts.
 */
export const DEFAULT_BILLED_MEM_MIB = 256;

export async function usageOf(db: Db, plans: Plan[], accountId: string, now = Date.now()) {
  const period = periodOf(now);
  const [row] = await db
    .select({
      plan: accounts.plan,
      // The period's sums, kept by a trigger on usage (schema.ts usageTotals): one row, whatever the period's size.
      invocations: sql<number>`coalesce(${usageTotals.invocations}, 0)`,
      durationMs: sql<number>`coalesce(${usageTotals.durationMs}, 0)`,
      mibMs: sql<number>`coalesce(${usageTotals.mibMs}, 0)`,
      pending: sql<number>`(select count(*) from tasks p where p.account_id = "accounts"."id" and p.finished_at is null)`,
    })
    .from(accounts)
    .leftJoin(usageTotals, and(eq(usageTotals.accountId, accounts.id), eq(usageTotals.period, period)))
    .where(eq(accounts.id, accountId));
  const plan = planOf(plans, row?.plan ?? "");
  const invocations = row?.invocations ?? 0;
  const pending = row?.pending ?? 0;
  return {
    period,
    plan: { id: plan.id, description: plan.description, price: plan.price, currency: plan.currency, invocations: plan.invocations },
    invocations,
    // Unfinished tasks have reserved theirs (services/admission.ts): what remains is what can still be issued.
    pending,
    remaining: Math.max(0, plan.invocations - invocations - pending),
    durationMs: row?.durationMs ?? 0,
    gbSeconds: Math.round(((row?.mibMs ?? 0) / 1024 / 1000) * 1000) / 1000,
  };
}
