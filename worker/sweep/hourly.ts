import type { Bindings } from "../env.js";
import type { Db } from "../db/client.js";
import { QueryBudget } from "../db/query-budget.js";
import { sweepUnreachable } from "../dispatch/client.js";
import { sweepOrphans } from "../services/orphans.js";
import { sweepTasks } from "../services/retention.js";
import { pruneUsage, usageDedupMs } from "../services/usage-pruning.js";
import { archiveTasks } from "../task-history/archiver.js";
import { purgeArchive } from "../task-history/retention.js";
import { archiveAfterMs } from "../task-history/window.js";
import { retentionMs } from "../tasks/retention-period.js";

/** D1 queries the sweep makes at most, when SWEEP_D1_QUERIES does not say: D1's 1,000 an invocation on Workers Paid, less a margin. */
export const DEFAULT_SWEEP_D1_QUERIES = 900;

export function sweepQueries(env: Pick<Bindings, "SWEEP_D1_QUERIES">): number {
  const n = Number(env.SWEEP_D1_QUERIES ?? DEFAULT_SWEEP_D1_QUERIES);
  return Number.isInteger(n) && n > 0 ? n : DEFAULT_SWEEP_D1_QUERIES;
}

type Log = (msg: string, n: number) => void;

/**
 * The hourly sweep, its parts one after another in one invocation, drawing on one budget of D1
 * queries (past D1's limit every query of the invocation fails, so a long backlog would fail all
 * of them rather than do some). First what callers see: tasks never queued, and waiting tasks no
 * node can take, are failed. Then the clean-up, each part capped so the next still gets a share:
 * usage rows past their horizon, then retention, of live records and of archived ones, before the
 * archive's move: retention is a rule, the move only keeps D1 small, so in a backlog the move is
 * what waits. A part that fails is logged and the others still run; what a part leaves, the next
 * hour's run takes up.
 */
export async function hourlySweep(db: Db, env: Bindings, now: number, log: Log): Promise<void> {
  const budget = new QueryBudget(sweepQueries(env));
  const parts: [string, () => Promise<number>][] = [
    ["tasks never queued failed", () => sweepOrphans(db, env, now, budget)],
    ["waiting tasks no node could take failed", () => sweepUnreachable(env)],
    ["usage rows past the dedup horizon deleted", () => pruneUsage(db, usageDedupMs(env), now, { budget })],
    ["finished tasks purged", () => sweepTasks(db, env.BUCKET, retentionMs(env), now, budget)],
    ["archived tasks purged", () => purgeArchive(db, env.BUCKET, retentionMs(env), now, budget)],
    ["task records archived", () => archiveTasks(db, env.BUCKET, archiveAfterMs(env), now, { budget })],
  ];
  for (const [msg, part] of parts) {
    try {
      log(msg, await part());
    } catch (e) {
      console.error(JSON.stringify({ level: "error", msg: `the hourly sweep's part failed: ${msg}`, error: String(e) }));
    }
  }
}
