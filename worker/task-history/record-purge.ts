import type { TaskRow } from "../db/rows.js";
import { taskInputKey, taskLogKey, taskResultKey } from "../lib/storage-keys.js";

/** R2 deletes at most 1,000 keys a call. */
const KEYS_A_CALL = 999;

/** The records that finished before `cutoff` and are not yet purged: retention's due. */
export const expiredRecords = (rows: TaskRow[], cutoff: number): TaskRow[] => rows.filter((r) => r.purgedAt == null && r.finishedAt != null && r.finishedAt < cutoff);

/** A record as retention leaves it: no input, result or log, inline or in R2, and marked purged at `now`. */
export const purgedRecord = (r: TaskRow, now: number): TaskRow => ({
  ...r,
  input: null,
  inputKey: null,
  resultHeaders: null,
  resultBody: null,
  resultKey: null,
  log: null,
  logKey: null,
  purgedAt: now,
});

/** Deletes every R2 object these tasks can have (input, result, log); deleting a deleted key is no error. */
export async function deletePayloadObjects(bucket: R2Bucket, tasks: TaskRow[]): Promise<void> {
  const keys = tasks.flatMap((t) => [taskInputKey(t.accountId, t.id), taskResultKey(t.accountId, t.id), taskLogKey(t.accountId, t.id)]);
  for (let i = 0; i < keys.length; i += KEYS_A_CALL) await bucket.delete(keys.slice(i, i + KEYS_A_CALL));
}
