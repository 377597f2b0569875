import type { Db } from "../db/client.js";
import { tasks } from "../db/schema.js";
import { stageInput, taskRow, type IssueOptions, type TaskRow } from "./row.js";

/**
 * Records a task in D1 directly, for what is not created in its shard: a bench's fill (bench/task-history.ts).
 * The API, endpoints and schedules create tasks in the shard (worker/task-life/create.ts).
 */
export async function issueTask(db: Db, bucket: R2Bucket, o: IssueOptions, now = Date.now()): Promise<TaskRow> {
  const staged = await stageInput(bucket, o, now);
  const [row] = await db.insert(tasks).values(taskRow(o, staged, now, o.fn, o.buildId)).returning();
  return row!;
}
