import { ApiError } from "../errors.js";
import { parseJsonText, parseWith, readTextLimited } from "../http/validate.js";
import { taskLogKey } from "../lib/storage-keys.js";
import { logLines, MAX_LOG_UPLOAD_BYTES } from "../../shared/protocol/messages.js";
import type { TaskRow } from "../db/rows.js";

/**
 * Task logs too large for an agent's report frame travel over HTTP: the agent PUTs the log (a JSON
 * array of lines) before it reports, and the outcome records a null `log`. Readers find it in R2.
 */
export async function storeUploadedLog(bucket: R2Bucket, t: TaskRow, req: Request): Promise<void> {
  if (req.headers.get("content-length") === null) throw new ApiError("length_required", "Content-Length is required");
  const lines = parseWith(logLines, parseJsonText(await readTextLimited(req, MAX_LOG_UPLOAD_BYTES)) ?? null);
  await bucket.put(taskLogKey(t.accountId, t.id), JSON.stringify(lines), { httpMetadata: { contentType: "application/json" } });
}
