import type { Db } from "../db/client.js";
import type { TaskRow } from "../db/rows.js";
import type { Bindings } from "../env.js";
import { shardOfTask, shardStub } from "../dispatch/client.js";
import { archivedTask, recordedTask } from "../task-history/reads.js";

/**
 * Reads of finished records past D1 and its archive's index: the shards' own archives
 * (shard-history/archive.ts, step 5 of docs/dispatch.md). A record is looked for there last, so
 * D1's copy answers while it has one. A shard out of reach fails the read rather than answer a
 * record missing or a page short.
 */

/** Where the shard that made a task keeps its archive: over RPC from the Worker, or the shard's own when it asks itself. */
export type ShardArchiveFinder = (accountId: string, taskId: string) => Promise<TaskRow | undefined>;

/** The task's shard (its id names it), asked over RPC. */
export const shardArchiveOf =
  (env: Bindings): ShardArchiveFinder =>
  async (accountId, taskId) =>
    (await shardStub(env, shardOfTask(env, taskId)).archivedTask(taskId, accountId)) ?? undefined;

/** The account's task as recorded anywhere past its shard's copy: D1's row, D1's archive, the shard's archive. */
export async function recordedAnywhere(db: Db, bucket: R2Bucket, accountId: string, taskId: string, shardArchive: ShardArchiveFinder): Promise<TaskRow | undefined> {
  return (await recordedTask(db, bucket, accountId, taskId)) ?? (await shardArchive(accountId, taskId));
}

/** The account's archived task, in D1's archive or its shard's (for a caller that already looked in D1). */
export async function archivedAnywhere(env: Bindings, db: Db, accountId: string, taskId: string): Promise<TaskRow | undefined> {
  return (await archivedTask(db, env.BUCKET, accountId, taskId)) ?? (await shardArchiveOf(env)(accountId, taskId));
}

/** A task in its shard's archive by id alone, whoever's: only for the public result, whose 5 minutes and endpoint the caller checks. */
export async function publicArchived(env: Bindings, taskId: string): Promise<TaskRow | undefined> {
  return (await shardStub(env, shardOfTask(env, taskId)).archivedTask(taskId)) ?? undefined;
}
