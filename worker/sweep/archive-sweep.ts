import type { Bindings } from "../env.js";
import type { Db } from "../db/client.js";
import { QueryBudget } from "../db/query-budget.js";
import { archiveTasks } from "../task-history/archiver.js";
import { purgeArchive } from "../task-history/retention.js";
import { archiveAfterMs } from "../task-history/window.js";
import { retentionMs } from "../tasks/retention-period.js";
import { runParts, sweepQueries, type Log } from "./parts.js";

/**
 * The archive sweep (issue 27), hourly at its own minute: retention of archived records, then the
 * move of records past the window. Its own invocation, so its own SWEEP_D1_QUERIES of D1's 1,000
 * queries: sharing the hourly sweep's, the two parts kept pace with about 55 tasks a second, below
 * what D1's window now holds. Retention first: it is a rule, the move only keeps D1 small, so in a
 * backlog the move is what waits. The two sweeps fire half an hour apart and each takes seconds to
 * minutes, so the move never reads a record while live retention purges it.
 */
export async function archiveSweep(db: Db, env: Bindings, now: number, log: Log): Promise<void> {
  const budget = new QueryBudget(sweepQueries(env));
  await runParts(
    [
      ["archived tasks purged", () => purgeArchive(db, env.BUCKET, retentionMs(env), now, budget)],
      ["task records archived", () => archiveTasks(db, env.BUCKET, archiveAfterMs(env), now, { budget })],
    ],
    log,
  );
}
