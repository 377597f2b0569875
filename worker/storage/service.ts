import { and, eq } from "drizzle-orm";
import type { Db } from "../db/client.js";
import type { Bindings } from "../env.js";
import { functionDispatchers } from "../dispatch/client.js";
import { functionStorage } from "../db/schema.js";
import { notFound } from "../errors.js";
import { getOwnFunction } from "../services/functions.js";
import { base64Of } from "../http/task-body.js";

/** GET /v1/function/<id>/storage: `{size, updatedAt, value}` (base64), 404 when nothing is stored. */
export async function readStorage(env: Bindings, db: Db, accountId: string, functionId: string) {
  const bucket = env.BUCKET;
  await getOwnFunction(db, accountId, functionId);
  // A value a task set reaches D1 with its outcome's batch: the function's shard writes what it
  // holds first, so the owner reads what the last finished task set (a rare read; a shard out of
  // reach leaves D1's value).
  await Promise.all(functionDispatchers(env, functionId).map((s) => s.flushRecords().catch(() => 0)));
  const [row] = await db.select().from(functionStorage).where(and(eq(functionStorage.functionId, functionId), eq(functionStorage.accountId, accountId)));
  if (!row) throw notFound("storage of this function");
  let value = row.value;
  if (value === null && row.valueKey) {
    const object = await bucket.get(row.valueKey);
    if (!object) throw notFound("storage of this function");
    value = base64Of(new Uint8Array(await object.arrayBuffer()));
  }
  return { size: row.size, updatedAt: new Date(row.setAt).toISOString(), value: value ?? "" };
}

/** DELETE /v1/function/<id>/storage: the row goes, and its R2 object if any. */
export async function clearStorage(db: Db, bucket: R2Bucket, accountId: string, functionId: string): Promise<void> {
  await getOwnFunction(db, accountId, functionId);
  const rows = await db.delete(functionStorage).where(and(eq(functionStorage.functionId, functionId), eq(functionStorage.accountId, accountId))).returning({ valueKey: functionStorage.valueKey });
  for (const r of rows) if (r.valueKey) await bucket.delete(r.valueKey);
}
