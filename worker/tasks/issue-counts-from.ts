import type { Db } from "../db/client.js";
import { issueCountsFrom } from "../db/schema.js";

/** Set once by their migrations and never changed: an isolate reads the row once. */
let known: { fromMs: number; accountsFromMs: number | null } | null | undefined;

async function cutovers(db: Db) {
  if (known === undefined) [known = null] = await db.select().from(issueCountsFrom).limit(1);
  return known;
}

/**
 * Since when the dispatcher shards count every task's issue (issue_counts_from, migration 0032),
 * or undefined before that migration: then D1's rows and the archive's minutes count them all, as
 * the move then still keeps every minute.
 */
export const shardsCountIssuesFrom = async (db: Db): Promise<number | undefined> => (await cutovers(db))?.fromMs;

/**
 * The UTC midnight from which an account's `todayTasks` is the shards' count of its issues alone
 * (migration 0033), or undefined before that migration.
 */
export const shardsCountAccountDaysFrom = async (db: Db): Promise<number | undefined> => (await cutovers(db))?.accountsFromMs ?? undefined;

/** Tests that move a cutover make the isolate read it again. */
export const forgetShardsCountIssuesFrom = () => {
  known = undefined;
};
