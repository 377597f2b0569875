import type { Bindings } from "../env.js";
import type { Db } from "../db/client.js";
import { QueryBudget } from "../db/query-budget.js";
import { archiveTasks } from "../task-history/archiver.js";
import { purgeArchive } from "../task-history/retention.js";
import { removeUnindexedChunks } from "../task-history/unindexed-chunks.js";
import { archiveAfterMs, archiveHoldMs } from "../task-history/window.js";
import { retentionMs } from "../tasks/retention-period.js";
import { runParts, sweepQueries, type Log } from "./parts.js";

/**
 * The archive sweep (issue 27), three times an hour (crons.ts): retention of archived records, then
 * the move of records past the window, then the leftovers of killed moves. Each run is an invocation of its own, so it has its own
 * SWEEP_D1_QUERIES of D1's 1,000 queries. Retention first: it is a rule, the move only keeps D1
 * small, so in a backlog the move is what waits. Runs that overlap one another or live retention are
 * safe: the move commits only rows still in D1 as it read them (task-history/archiver.ts). Last, the
 * chunks a killed move left unindexed (task-history/unindexed-chunks.ts): rare, and three queries at
 * most, which the move's cap (850 of the 900) leaves.
 */
export async function archiveSweep(db: Db, env: Bindings, now: number, log: Log): Promise<void> {
  const budget = new QueryBudget(sweepQueries(env));
  await runParts(
    [
      ["archived tasks purged", () => purgeArchive(db, env.BUCKET, retentionMs(env), now, budget)],
      ["task records archived", () => archiveTasks(db, env.BUCKET, archiveAfterMs(env), now, { budget, holdMs: archiveHoldMs(env) })],
      ["unindexed archive chunks deleted", () => removeUnindexedChunks(db, env.BUCKET, now, budget)],
    ],
    log,
  );
}
