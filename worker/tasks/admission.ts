import { sql, type SQL } from "drizzle-orm";
import { ApiError } from "../errors.js";
import { periodOf, plansFrom, type Plan } from "../billing/plans.js";
import type { StoreBindings } from "../bindings.js";
import { releasedBuild } from "../releases/resolve.js";

/**
 * Unfinished tasks an account may hold at once (MAX_PENDING_TASKS overrides): beyond it new tasks,
 * public calls and triggers are refused, so no account (nor anonymous callers of its endpoints)
 * can queue without bound on the shared dispatchers.
 */
export const DEFAULT_MAX_PENDING_TASKS = 1000;
/** What a refused caller is told to wait: the backlog drains at the fleet's pace, not the caller's. */
const PENDING_RETRY_AFTER_S = 10;

/** What admission checks an account against: its plan's invocations, and the pending cap. */
export interface AdmissionLimits {
  plans: Plan[];
  maxPending: number;
}

export function admissionLimits(env: Pick<StoreBindings, "PLANS" | "MAX_PENDING_TASKS">): AdmissionLimits {
  const n = Number(env.MAX_PENDING_TASKS ?? DEFAULT_MAX_PENDING_TASKS);
  return { plans: plansFrom(env.PLANS), maxPending: Number.isInteger(n) && n >= 1 ? n : DEFAULT_MAX_PENDING_TASKS };
}

/**
 * What decides whether a function may take a new task — the build its release runs, its account's quota
 * and its account's unfinished tasks — as columns read in the same round trip as the function (or the endpoint) itself: task
 * creation is the hot path, and each D1 round trip counts there. `period` is the billing period
 * whose usage counts (periodOf(now)), or a placeholder for a statement built once.
 *
 * Unfinished tasks reserve their invocation: each is metered when it ends (whatever its outcome
 * but a cancel), so `used + pending` is what the period will have used once the queue drains, and
 * queued work can never take an account past its plan. (A task issued before a period ends and
 * finished after counts in the new period, as its metering does.)
 */
export const admissionColumns = (period: unknown) => ({
  // Written out with aliases: drizzle leaves columns unqualified in single-table selects, and an
  // unqualified "id" inside a subquery would name the subquery's own table.
  // The release decides (worker/releases/): the pinned or canary build, else the newest successful one.
  buildId: releasedBuild,
  plan: sql<string>`(select a.plan from accounts a where a.id = "functions"."account_id")`,
  // One row of usage_totals, kept by a trigger on usage: not a count over the period's tasks.
  used: sql<number>`coalesce((select u.invocations from usage_totals u where u.account_id = "functions"."account_id" and u.period = ${period}), 0)`,
  // Read through the partial index tasks_account_unfinished: at most the cap's worth of rows.
  pending: sql<number>`(select count(*) from tasks p where p.account_id = "functions"."account_id" and p.finished_at is null)`,
});

export const noSuccessfulBuild = () =>
  new ApiError("no_successful_build", "the function has no successful build yet: upload one with POST /v1/build/<function_id>");

/** 402: the period's invocations are used (`used`) or reserved (`pending`). */
export function quotaExhausted(plan: Plan, used: number, pending: number, now: number): ApiError {
  const why = pending ? "unfinished tasks hold theirs until they end" : "new tasks resume next period";
  return new ApiError("quota_exhausted", `the ${plan.description} plan's invocations for ${periodOf(now)} are used up (${used} finished + ${pending} pending of ${plan.invocations}); ${why}`);
}

/** 429: the account holds its cap of unfinished tasks. */
export const tooManyPending = (pending: number) =>
  new ApiError("too_many_pending_tasks", `the account has ${pending} unfinished tasks, its limit; new ones are accepted as those finish`, undefined, {
    "Retry-After": String(PENDING_RETRY_AFTER_S),
  });

/**
 * planOf(plans, plan).invocations as SQL, for a plan id that is itself SQL (a lease's grant,
 * shard-admission/lease-statements.ts): a CASE with one WHEN per configured plan and the first plan's
 * limit as ELSE, planOf() line for line. PLANS holds a handful of plans, two parameters each.
 */
export function planInvocations(plans: Plan[], plan: SQL): SQL {
  const whens = plans.map((p) => sql`when ${p.id} then ${p.invocations}`);
  return sql`case ${plan} ${sql.join(whens, sql` `)} else ${plans[0]!.invocations} end`;
}
