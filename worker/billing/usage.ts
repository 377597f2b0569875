import { and, eq, ne, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { accounts, tasks, usage } from "../db/schema.js";
import { periodOf, planOf, type Plan } from "./plans.js";

/** Memory billed for a task that asked for the node's default (memSize 0). */
export const DEFAULT_BILLED_MEM_MIB = 256;

/**
 * The metering statement for one task, run in the same batch as the update that finishes it:
 * it only matches the task finished at exactly `finishedAt`, and the task id is the key, so a
 * task is metered once. Cancelled tasks (410) never ran and are not metered.
 */
export function meterTask(db: Db, taskId: string, finishedAt: number) {
  return db
    .insert(usage)
    .select(
      db
        .select({
          taskId: tasks.id,
          accountId: tasks.accountId,
          functionId: tasks.functionId,
          period: sql<string>`${periodOf(finishedAt)}`.as("period"),
          finishedAt: sql<number>`${tasks.finishedAt}`.as("finished_at"),
          durationMs: sql<number>`coalesce(${tasks.durationMs}, 0)`.as("duration_ms"),
          memMiB: sql<number>`case when ${tasks.memSize} > 0 then ${tasks.memSize} else ${DEFAULT_BILLED_MEM_MIB} end`.as("mem_mib"),
        })
        .from(tasks)
        .where(and(eq(tasks.id, taskId), eq(tasks.finishedAt, finishedAt), ne(tasks.status, 410))),
    )
    .onConflictDoNothing();
}

export async function usageOf(db: Db, plans: Plan[], accountId: string, now = Date.now()) {
  const period = periodOf(now);
  const [row] = await db
    .select({
      plan: accounts.plan,
      invocations: sql<number>`(select count(*) from usage u where u.account_id = "accounts"."id" and u.period = ${period})`,
      durationMs: sql<number>`(select coalesce(sum(u.duration_ms), 0) from usage u where u.account_id = "accounts"."id" and u.period = ${period})`,
      mibMs: sql<number>`(select coalesce(sum(u.duration_ms * u.mem_mib), 0) from usage u where u.account_id = "accounts"."id" and u.period = ${period})`,
    })
    .from(accounts)
    .where(eq(accounts.id, accountId));
  const plan = planOf(plans, row?.plan ?? "");
  const invocations = row?.invocations ?? 0;
  return {
    period,
    plan: { id: plan.id, description: plan.description, price: plan.price, currency: plan.currency, invocations: plan.invocations },
    invocations,
    remaining: Math.max(0, plan.invocations - invocations),
    durationMs: row?.durationMs ?? 0,
    gbSeconds: Math.round(((row?.mibMs ?? 0) / 1024 / 1000) * 1000) / 1000,
  };
}
