/**
 * R2 layout. Everything of one function sits under one prefix, so deleting a function
 * deletes its zips and artifacts by listing that prefix.
 */
export const functionPrefix = (accountId: string, functionId: string) => `acct/${accountId}/fn/${functionId}/`;
export const zipKey = (accountId: string, functionId: string, buildId: string) =>
  `${functionPrefix(accountId, functionId)}builds/${buildId}/source.zip`;
export const artifactKey = (accountId: string, functionId: string, buildId: string) =>
  `${functionPrefix(accountId, functionId)}builds/${buildId}/artifact.tar`;
/** A build's whole log as text (bounded, shared/build-log.ts): under its function, deleted with it. */
export const buildLogKey = (accountId: string, functionId: string, buildId: string) =>
  `${functionPrefix(accountId, functionId)}builds/${buildId}/log.txt`;
/** A schedule's payload body: under its function, whose deletion deletes its schedules. */
export const schedulePayloadKey = (accountId: string, functionId: string, scheduleId: string) =>
  `${functionPrefix(accountId, functionId)}schedules/${scheduleId}/payload.bin`;
/** Task inputs and results outlive the function, so they sit under the account, not the function. */
export const taskInputKey = (accountId: string, taskId: string) => `acct/${accountId}/tasks/${taskId}/input.json`;
export const taskResultKey = (accountId: string, taskId: string) => `acct/${accountId}/tasks/${taskId}/result.bin`;
export const taskLogKey = (accountId: string, taskId: string) => `acct/${accountId}/tasks/${taskId}/log.json`;

export async function deletePrefix(bucket: R2Bucket, prefix: string): Promise<void> {
  let cursor: string | undefined;
  do {
    const page = await bucket.list({ prefix, ...(cursor ? { cursor } : {}) });
    if (page.objects.length) await bucket.delete(page.objects.map((o) => o.key));
    cursor = page.truncated ? page.cursor : undefined;
  } while (cursor);
}

/**
 * A chunk of an account's archived task records (worker/task-history/): under the account, as
 * tasks outlive their functions; named by its first and last id and how many records it holds, so
 * a chunk written again for the same records (a move retried after a failure) lands on the same
 * key, and one of other records never overwrites it. Two overlapping moves may read the same range
 * at different moments: the later may also hold a record whose late outcome made it eligible in
 * between, and it only ever holds more, never other, records, so the count tells them apart.
 * The index row keeps no name (task-history/chunk-names.ts makes it from the row), but for chunks
 * written before the count was part of names, whose rows keep theirs.
 */
export const historyChunkKey = (accountId: string, firstId: string, lastId: string, records: number) =>
  `history/${accountId}/${firstId}-${lastId}-${records}.ndjson.gz`;
