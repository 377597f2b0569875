import type { TaskRow } from "../db/rows.js";
import { mergedPage } from "../lib/pages.js";
import type { ShardArchive } from "./archive.js";
import type { FinishedRecords } from "./finished-records.js";
import type { ListedTask, ListQuery } from "./list-query.js";

const listed = (r: ListedTask): ListedTask => ({ id: r.id, issuedAt: r.issuedAt, progress: r.progress, status: r.status });

/**
 * A shard's page of a list, in one call: the tasks it holds, the finished records it keeps, and
 * its archive's, merged by id. In that order, so a task on its way is where the next look finds it:
 * the commit that takes a task from what the shard holds keeps its record in the same storage step,
 * and a kept record leaves only once its archive has it. A full page of held and kept tasks needs
 * only archived ones newer than its oldest (one held back by a pause may be older than archived ones).
 */
export async function shardListPage(q: ListQuery, held: () => Promise<TaskRow[]>, kept: FinishedRecords, archive: ShardArchive): Promise<ListedTask[]> {
  const fromHeld = (await held()).map(listed);
  // After the held tasks' reads, which may wait: a task recorded meanwhile is kept by now.
  const recent = mergedPage(kept.page(q), fromHeld, q.limit);
  const above = recent.length === q.limit ? recent.at(-1)!.id : undefined;
  return mergedPage((await archive.page({ ...q, above })).map(listed), recent, q.limit);
}
