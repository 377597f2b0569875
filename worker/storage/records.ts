import { inArray, sql } from "drizzle-orm";
import { sqlBatch, type Db } from "../db/client.js";
import { functionStorage } from "../db/schema.js";
import type { Outcome } from "../dispatch/outcomes.js";
import { storageValueKey } from "./keys.js";

/**
 * Writes a committed batch's storage changes to D1, for the owner's reads: one statement a change,
 * in the batch's order (the order tasks finished), each only over an older value, so the last
 * finished task wins whatever order writes arrive in. R2 copies that a change replaced go after.
 */
export async function storageWritten(db: Db, bucket: R2Bucket, batch: Outcome[]): Promise<void> {
  const changes = batch.filter((o) => o.report?.storage);
  if (!changes.length) return;
  const functionIds = [...new Set(changes.map((o) => o.functionId))];
  const before = await db.select({ key: functionStorage.valueKey }).from(functionStorage).where(inArray(functionStorage.functionId, functionIds));
  await sqlBatch(
    db,
    changes.map((o) => {
      const change = o.report!.storage!;
      if (change.op === "clear") return sql`delete from ${functionStorage} where function_id = ${o.functionId} and set_at <= ${o.at}`;
      const key = change.value === undefined ? storageValueKey(o.accountId, o.functionId, o.taskId) : null;
      return sql`insert into ${functionStorage} (function_id, account_id, value, value_key, size, set_at, task_id)
        select ${o.functionId}, ${o.accountId}, ${change.value ?? null}, ${key}, ${change.size}, ${o.at}, ${o.taskId}
        where exists (select 1 from functions where id = ${o.functionId})
        on conflict (function_id) do update set value = excluded.value, value_key = excluded.value_key, size = excluded.size,
          set_at = excluded.set_at, task_id = excluded.task_id
        where excluded.set_at >= function_storage.set_at`;
    }),
  );
  const now = await db.select({ key: functionStorage.valueKey }).from(functionStorage).where(inArray(functionStorage.functionId, functionIds));
  const current = new Set(now.map((r) => r.key));
  const stale = before.flatMap((r) => (r.key && !current.has(r.key) ? [r.key] : []));
  if (stale.length) await bucket.delete(stale);
}
