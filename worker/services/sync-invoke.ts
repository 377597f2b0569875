import { resultResponse } from "./task-results.js";
import type { TaskRow } from "../db/rows.js";

/**
 * The answer to a synchronous call that finished: the function's own response, marked as the
 * applied preference, with the task id and where its result stays readable.
 */
export async function syncResponse(bucket: R2Bucket, row: TaskRow, resultPath: string, extraHeaders: Record<string, string> = {}): Promise<Response> {
  const res = await resultResponse(bucket, row);
  for (const [k, v] of Object.entries(extraHeaders)) res.headers.set(k, v);
  res.headers.set("Preference-Applied", "wait");
  res.headers.set("X-Task-Id", row.id);
  res.headers.set("Location", resultPath);
  res.headers.append("Vary", "Prefer");
  return res;
}
