import type { Bindings } from "../env.js";
import { allShards, functionDispatchers } from "../dispatch/client.js";

/** What changed of admission's facts: one function (its row, release or builds), or an account (its plan, grants, or itself). */
export type AdmissionChange = { functionId: string } | { accountId: string };

/**
 * Tells the shards that cache admission facts (FunctionBook) to forget them, before the caller
 * hears back: a task created after the answer is admitted on the new facts. A function's facts
 * live in its own shard; an account's functions may be on every shard.
 */
export async function admissionChanged(env: Bindings, change: AdmissionChange): Promise<void> {
  if ("functionId" in change) await Promise.all(functionDispatchers(env, change.functionId).map((s) => s.admissionChanged({ functionId: change.functionId })));
  else await Promise.all(allShards(env).map((s) => s.admissionChanged({ accountId: change.accountId })));
}
