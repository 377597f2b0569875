import { and, eq, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { functions } from "../db/schema.js";
import { ApiError, notFound } from "../errors.js";
import { periodOf, planOf, type Plan } from "../billing/plans.js";

/**
 * What decides whether a function may take a new task — its runnable build and its account's
 * quota — as columns read in the same round trip as the function (or the endpoint) itself: task
 * creation is the hot path, and each D1 round trip counts there. `period` is the billing period
 * whose usage counts (periodOf(now)), or a placeholder for a statement built once.
 */
export const admissionColumns = (period: unknown) => ({
  // Written out with aliases: drizzle leaves columns unqualified in single-table selects, and an
  // unqualified "id" inside a subquery would name the subquery's own table.
  buildId: sql<string | null>`(select b.id from builds b where b.function_id = "functions"."id" and b.status = 'SUCCESS' order by b.id desc limit 1)`,
  plan: sql<string>`(select a.plan from accounts a where a.id = "functions"."account_id")`,
  used: sql<number>`(select count(*) from usage u where u.account_id = "functions"."account_id" and u.period = ${period})`,
});

export interface Admission {
  buildId: string | null;
  plan: string;
  used: number;
}

export const noSuccessfulBuild = () =>
  new ApiError("no_successful_build", "the function has no successful build yet: upload one with POST /v1/build/<function_id>");

/** 409 without a successful build, 402 once the period's invocations are used up; else the build to run. */
export function admit(a: Admission, plans: Plan[], now: number): string {
  if (!a.buildId) throw noSuccessfulBuild();
  const plan = planOf(plans, a.plan);
  if (a.used >= plan.invocations)
    throw new ApiError("quota_exhausted", `the ${plan.description} plan's invocations for ${periodOf(now)} are used up (${a.used}/${plan.invocations}); new tasks resume next period`);
  return a.buildId;
}

/**
 * admit() as a SQL condition on a row of `functions`, for the insert-select that issues a task in
 * one round trip (issueFunctionTask() in services/tasks.ts). The plan's invocation limit is
 * configuration, not a D1 row, so the statement carries it: a CASE over the account's plan id with
 * one WHEN per configured plan and the first plan's limit as ELSE, planOf() line for line. A CASE
 * rather than a bound JSON map of limits: PLANS holds a handful of plans (two parameters each keeps
 * the statement far below D1's 100), the SQL reads like planOf(), and no JSON path is built from a
 * plan id stored in D1. The statement's text changes only when PLANS does.
 */
export function admissible(plans: Plan[], period: unknown): SQL {
  const { buildId, plan, used } = admissionColumns(period);
  const whens = plans.map((p) => sql`when ${p.id} then ${p.invocations}`);
  const limit = sql`case ${plan} ${sql.join(whens, sql` `)} else ${plans[0]!.invocations} end`;
  return sql`${buildId} is not null and ${used} < ${limit}`;
}

/** A function ready to take a task: the caller's own (404 otherwise), with its build and quota checked. */
export async function admitFunction(db: Db, plans: Plan[], accountId: string, functionId: string, now = Date.now()) {
  const [row] = await db
    .select({ fn: functions, ...admissionColumns(periodOf(now)) })
    .from(functions)
    .where(and(eq(functions.id, functionId), eq(functions.accountId, accountId)));
  if (!row) throw notFound("function");
  return { fn: row.fn, buildId: admit(row, plans, now) };
}
