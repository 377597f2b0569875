import type { Bindings } from "../env.js";
import { ApiError } from "../errors.js";
import { dispatcherFor } from "../dispatch/client.js";
import type { RequestKey } from "./request-key.js";

/** What a call under a key comes to: a task it issued now, or the task an earlier call with the key issued. */
export type Issued<T> = { issued: T } | { replayOf: string };

const conflict = () =>
  new ApiError("idempotency_conflict", "this Idempotency-Key was used in the last 24 hours for a call with a different body or query; use a new key for a different call");

/**
 * Runs `issue` at most once per key (api-decisions "Idempotency-Key"): the function's shard, which
 * creates every task of the function, is asked first whether the key names a task already. A call
 * without a key just issues. `issue` failing (402, 429, …) frees the key, so a retry may succeed.
 */
export async function issueOnce<T extends { id: string }>(env: Bindings, functionId: string, key: RequestKey | null, issue: () => Promise<T>): Promise<Issued<T>> {
  if (!key) return { issued: await issue() };
  const shard = dispatcherFor(env, functionId);
  const claimed = await shard.claimIdempotencyKey(key.scope, key.key, key.fingerprint);
  if (claimed.kind === "conflict") throw conflict();
  if (claimed.kind === "replay") return { replayOf: claimed.taskId };
  let task: T;
  try {
    task = await issue();
  } catch (err) {
    await shard.settleIdempotencyKey(key.scope, key.key, claimed.claim, null).catch(() => undefined);
    throw err;
  }
  // Should this fail, the claim lapses after CLAIM_MS and a later retry could issue a second task:
  // the task exists, so the call answers with it all the same.
  await shard.settleIdempotencyKey(key.scope, key.key, claimed.claim, task.id).catch((e: unknown) =>
    console.error(JSON.stringify({ level: "error", message: "recording an Idempotency-Key's task failed", taskId: task.id, error: String(e) })),
  );
  return { issued: task };
}
