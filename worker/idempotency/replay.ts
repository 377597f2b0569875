import type { StoreBindings } from "../bindings.js";
import { REPLAYED_HEADER } from "../../shared/schemas/idempotency.js";
import { syncResponse } from "../services/sync-invoke.js";
import type { TaskRow } from "../db/rows.js";

/** Marks an answer that names an earlier call's task. */
export const REPLAYED = { [REPLAYED_HEADER]: "true" } as const;

/**
 * A replayed call answers as the first call did: 201 {id} (null here, the route answers it), or,
 * when this call prefers to wait (`Prefer: wait`, its own, since the first may not have asked),
 * the task's response once it is finished — waiting as long as asked through `awaitTask`.
 */
export async function replayedResult(
  env: Pick<StoreBindings, "BUCKET">,
  task: TaskRow,
  waitS: number,
  awaitTask: () => Promise<TaskRow>,
  resultPath: string,
  headers: Record<string, string> = {},
): Promise<Response | null> {
  if (waitS <= 0) return null;
  const done = task.finishedAt != null ? task : await awaitTask();
  return done.finishedAt != null ? syncResponse(env.BUCKET, done, resultPath, { ...headers, ...REPLAYED }) : null;
}
