import type { DatabaseSync } from "node:sqlite";
import type { TaskRow } from "../../worker/db/rows.js";

/** An R2 bucket that fails any use: the outcome benches keep every payload inline. */
export const NO_BUCKET = new Proxy({}, { get: () => () => Promise.reject(new Error("the bench wrote to R2")) }) as R2Bucket;

/** `n` accounts, inserted into the migrated database; a batch's tasks go round them. */
export function benchAccounts(sqlite: DatabaseSync, n: number): string[] {
  const ids = Array.from({ length: n }, (_, i) => `bench-account-${i}`);
  for (const id of ids) sqlite.prepare("insert into accounts (id, name, created_at) values (?, ?, 0)").run(id, id);
  return ids;
}

/** A task as its shard creates it: unfinished, a small JSON input, its account's one function. */
export const benchRow = (id: string, accountId: string, at: number): TaskRow => ({
  id, accountId, functionId: `fn-of-${accountId}`, lang: "py", buildId: "build", endpointId: null, triggerId: null, parentTaskId: null,
  chainId: null, hop: 0, issuedAt: at, assignedAt: null, finishedAt: null, progress: 0, status: 0, node: null, timeout: 30,
  cpuCount: 1, memSize: 256, privileged: false, egress: "none", networkLatency: 0, runtime: null, input: '{"order":12345}', inputKey: null,
  resultStatus: null, resultHeaders: null, resultBody: null, resultKey: null, log: null, logKey: null, durationMs: null, attempts: 0,
  purgedAt: null, scheduledId: null,
});
