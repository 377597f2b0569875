/**
 * What the Worker and its Durable Objects are bound to, but the Durable Objects themselves: D1, R2 and
 * the configuration. Kept apart from env.ts, whose namespaces name the objects' classes, so that the
 * code those classes run can take its settings without importing the classes back.
 */
export interface StoreBindings {
  DB: D1Database;
  BUCKET: R2Bucket;
  /** How many dispatcher shards functions are spread over (default 1); see docs/dispatch.md. */
  DISPATCH_SHARDS?: string;
  /** The plans, a JSON array (see worker/billing/plans.ts). */
  PLANS?: string;
  /** Unfinished tasks one account may hold (default 1000); see worker/tasks/admission.ts. */
  MAX_PENDING_TASKS?: string;
  /**
   * Defaults of what one account may hold, a JSON object with any of schedules, queuedBuilds,
   * artifactsKept, syncWaits (worker/limits/account-limits.ts); each may be changed per account.
   */
  ACCOUNT_LIMITS?: string;
  /** Milliseconds between a shard's batches of task records to D1 (default 100); see worker/task-life/flush-gap.ts. */
  RECORD_FLUSH_MS?: string;
  /**
   * Where a task's record lives: "shard" (its dispatcher shard alone; D1 keeps sums and counts) or
   * "d1" (a row in D1 as well, the layout before; the default). See docs/dispatch.md, "Step 4".
   */
  TASK_ROWS?: string;
  /** Days a finished task's input, result and log are kept (default 30); see worker/tasks/retention-period.ts. */
  TASK_RETENTION_DAYS?: string;
  /** Hours a finished task's record stays in D1 before the archive may take it (default and least 1); see worker/task-history/window.ts. */
  TASK_ARCHIVE_AFTER_HOURS?: string;
  /** The same in days, its earlier name: read only when TASK_ARCHIVE_AFTER_HOURS is not set. */
  TASK_ARCHIVE_AFTER_DAYS?: string;
  /** Hours an account's records past the window may wait for a full chunk before they move however few (168, at least 1). */
  TASK_ARCHIVE_HOLD_HOURS?: string;
  /** Days a failed attempt's usage row is kept to count a re-recorded attempt once (default 2); see worker/services/usage-pruning.ts. */
  USAGE_DEDUP_DAYS?: string;
  /** D1 queries the hourly sweep may make in its invocation (default 900; D1 answers 1,000 on Workers Paid, 50 on Free); see worker/sweep/hourly.ts. */
  SWEEP_D1_QUERIES?: string;
  /** Shared secret of the payment provider's signed webhook. */
  BILLING_WEBHOOK_SECRET?: string;
  /**
   * Key material for function secrets at rest (worker/function-config/secret-box.ts): a Worker
   * secret (`wrangler secret put SECRETS_KEY`), `.dev.vars` locally. Without it secrets cannot be set or run.
   */
  SECRETS_KEY?: string;
  /** Operator secret for /v1/admin routes (a Worker secret; `.dev.vars` locally). */
  ADMIN_TOKEN?: string;
  /** "1" counts what requests cost, for bench/cost.ts (worker/diagnostics/cost-counters.ts); never set in production. */
  COST_COUNTERS?: string;
  /** Milliseconds added before every D1 round trip, emulating a far primary (worker/db/d1-trouble.ts); unset in wrangler.toml. */
  D1_DELAY_MS?: string;
  /** "1" lets the local stack's tests make D1 fail for a while (POST /__test/d1); never set in a deployment. */
  D1_TEST_FAILURES?: string;
}
