import { and, eq } from "drizzle-orm";
import type { Db } from "../db/client.js";
import type { Bindings } from "../env.js";
import { functions } from "../db/schema.js";
import { notFound } from "../errors.js";
import { functionDispatchers } from "../dispatch/client.js";
import { admissionChanged } from "../shard-admission/notify.js";
import type { RetryPolicy } from "../../shared/schemas/retry.js";

type FunctionPolicyRow = Pick<typeof functions.$inferSelect, "id" | "retryMaxAttempts" | "retryBackoffSeconds" | "deadLetterFunctionId" | "concurrencyMax">;

const policyColumns = {
  id: functions.id,
  retryMaxAttempts: functions.retryMaxAttempts,
  retryBackoffSeconds: functions.retryBackoffSeconds,
  deadLetterFunctionId: functions.deadLetterFunctionId,
  concurrencyMax: functions.concurrencyMax,
};

export const retryOf = (f: FunctionPolicyRow): RetryPolicy => ({ maxAttempts: f.retryMaxAttempts, backoffSeconds: f.retryBackoffSeconds, deadLetterFunctionId: f.deadLetterFunctionId });

/** One of the caller's functions' retry policy and concurrency cap (404 for any other). */
export async function functionPolicy(db: Db, accountId: string, functionId: string): Promise<FunctionPolicyRow> {
  const [row] = await db.select(policyColumns).from(functions).where(and(eq(functions.id, functionId), eq(functions.accountId, accountId)));
  if (!row) throw notFound("function");
  return row;
}

/**
 * Writes one of the caller's functions' policy columns, then tells its dispatcher shard before the
 * caller hears back, so a task queued after the answer follows the new values.
 */
export async function writeFunctionPolicy(env: Bindings, db: Db, accountId: string, functionId: string, values: Partial<Omit<FunctionPolicyRow, "id">>): Promise<void> {
  const [row] = await db
    .update(functions)
    .set(values)
    .where(and(eq(functions.id, functionId), eq(functions.accountId, accountId)))
    .returning(policyColumns);
  if (!row) throw notFound("function");
  const policy = { retry: retryOf(row), concurrency: row.concurrencyMax };
  await Promise.all(functionDispatchers(env, functionId).map((s) => s.policyChanged(functionId, policy)));
  await admissionChanged(env, { functionId });
}

/** PUT /v1/function/<id>/retry: the dead-letter function must be the caller's too (404 otherwise, as for any record not theirs). */
export async function setRetry(env: Bindings, db: Db, accountId: string, functionId: string, p: RetryPolicy): Promise<void> {
  if (p.deadLetterFunctionId) {
    const [dl] = await db.select({ id: functions.id }).from(functions).where(and(eq(functions.id, p.deadLetterFunctionId), eq(functions.accountId, accountId)));
    if (!dl) throw notFound("dead-letter function");
  }
  await writeFunctionPolicy(env, db, accountId, functionId, { retryMaxAttempts: p.maxAttempts, retryBackoffSeconds: p.backoffSeconds, deadLetterFunctionId: p.deadLetterFunctionId });
}
