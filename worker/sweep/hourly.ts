import type { Bindings } from "../env.js";
import type { Db } from "../db/client.js";
import { QueryBudget } from "../db/query-budget.js";
import { sweepUnreachable } from "../dispatch/client.js";
import { sweepOrphans } from "../services/orphans.js";
import { sweepTasks } from "../services/retention.js";
import { pruneUsage, usageDedupMs } from "../services/usage-pruning.js";
import { pruneArchivedIssues } from "../task-history/issue-pruning.js";
import { retentionMs } from "../tasks/retention-period.js";
import { runParts, sweepQueries, type Log } from "./parts.js";

/**
 * The hourly sweep, its parts one after another in one invocation, drawing on one budget of D1
 * queries (past D1's limit every query of the invocation fails, so a long backlog would fail all
 * of them rather than do some). First what callers see: tasks never queued, and waiting tasks no
 * node can take, are failed. Then the clean-up, each part capped so the next still gets a share:
 * usage rows and archived issue times past their horizons, then retention of live records. The
 * archive's own work (its retention and the move) is the archive sweep's (archive-sweep.ts), in an
 * invocation, and a budget, of its own.
 */
export async function hourlySweep(db: Db, env: Bindings, now: number, log: Log): Promise<void> {
  const budget = new QueryBudget(sweepQueries(env));
  await runParts(
    [
      ["tasks never queued failed", () => sweepOrphans(db, env, now, budget)],
      ["waiting tasks no node could take failed", () => sweepUnreachable(env)],
      ["usage rows past the dedup horizon deleted", () => pruneUsage(db, usageDedupMs(env), now, { budget })],
      ["archived issue times past the week deleted", () => pruneArchivedIssues(db, now, { budget })],
      ["finished tasks purged", () => sweepTasks(db, env.BUCKET, retentionMs(env), now, budget)],
    ],
    log,
  );
}
