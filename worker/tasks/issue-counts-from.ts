import type { Db } from "../db/client.js";
import { issueCountsFrom } from "../db/schema.js";

/** Set once by its migration and never changed: an isolate reads it once. */
let known: number | undefined;

/**
 * Since when the dispatcher shards count every task's issue (issue_counts_from, migration 0032),
 * or undefined before that migration: then D1's rows and the archive's minutes count them all, as
 * the move then still keeps every minute.
 */
export async function shardsCountIssuesFrom(db: Db): Promise<number | undefined> {
  if (known !== undefined) return known;
  const [row] = await db.select({ fromMs: issueCountsFrom.fromMs }).from(issueCountsFrom).limit(1);
  known = row?.fromMs;
  return known;
}

/** Tests that move the cutover make the isolate read it again. */
export const forgetShardsCountIssuesFrom = () => {
  known = undefined;
};
