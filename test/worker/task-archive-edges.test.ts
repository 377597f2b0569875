import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ARCHIVE_CRON } from "../../worker/crons.js";
import { openDb } from "../../worker/db/client.js";
import { QueryBudget } from "../../worker/db/query-budget.js";
import type { Bindings } from "../../worker/env.js";
import { historyChunkKey } from "../../worker/lib/storage-keys.js";
import { DAY_MS, HOUR_MS } from "../../worker/lib/time.js";
import { archiveTasks } from "../../worker/task-history/archiver.js";
import { chunkKey, nameFields } from "../../worker/task-history/chunk-names.js";
import { taskArchive } from "../../worker/db/schema.js";
import { eq } from "drizzle-orm";
import { removeUnindexedChunks, UNINDEXED_MAX_QUERIES } from "../../worker/task-history/unindexed-chunks.js";
import { archiveAfterMs } from "../../worker/task-history/window.js";
import { call, callJson, clearQueue, deployedFunction, finishTask, newAccount, newTask, recordsFlushed, runCron } from "./helpers.js";
import { dispatcherFor } from "../../worker/dispatch/client.js";
import { FakeAgent } from "./fake-agent.js";

/**
 * Issue 27, the archive's edges: a creation sent again of a task already archived, and an invocation of the archive's move killed between putting a chunk in R2 and the batch
 * that indexes it (its CPU limit, an eviction) leaves a chunk nothing reads. Its records' inputs,
 * results and logs must still go at their retention, so the archive sweep deletes it later.
 */

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const bindings = env as unknown as Bindings;
const db = () => openDb(bindings);
/** Days after which a task of now has passed the window and the hold: it moves, however few its account has. */
const PAST = 9;
const T0 = Date.now() + PAST * DAY_MS;

/** The archive's bucket, whose invocation dies right after its first put of the account's chunk lands (other tests' records may move first). */
function bucketKilledAfterPut(accountId: string): R2Bucket {
  let puts = 0;
  return new Proxy(env.BUCKET, {
    get(b, name) {
      if (name === "put")
        return async (...a: Parameters<R2Bucket["put"]>) => {
          const put = await b.put(...a);
          if (a[0].includes(accountId) && ++puts === 1) throw new Error("the invocation was killed");
          return put;
        };
      const v = Reflect.get(b, name) as unknown;
      return typeof v === "function" ? v.bind(b) : v;
    },
  });
}

const move = (now: number, bucket: R2Bucket = env.BUCKET) => archiveTasks(db(), bucket, archiveAfterMs(bindings), now);
const sweep = (now: number) => removeUnindexedChunks(db(), env.BUCKET, now, new QueryBudget(100));
const objects = async (accountId: string) => (await env.BUCKET.list({ prefix: `history/${accountId}/` })).objects.map((o) => o.key).sort();
/** The names of the account's indexed chunks, as their rows make them. */
const indexed = async (accountId: string) =>
  (await db().select(nameFields).from(taskArchive).where(eq(taskArchive.accountId, accountId))).map(chunkKey).sort();
const marks = async (accountId: string) =>
  (await env.DB.prepare("select first_id, last_id from task_archive_pending where account_id = ?").bind(accountId).all()).results;

async function finished(n: number) {
  const { token, accountId } = await newAccount();
  const fn = await deployedFunction(token);
  const ids: string[] = [];
  for (let i = 0; i < n; i++) ids.push(await newTask(token, fn));
  for (const id of ids) await finishTask(id, { body: `result of ${id}` });
  return { token, accountId, fn, ids };
}

describe("the archive's mark of a chunk it writes", () => {
  it("is written with the read and gone with the batch that indexes the chunk", async () => {
    const { accountId, ids } = await finished(3);
    await move(T0);
    expect(await indexed(accountId)).toEqual([historyChunkKey(accountId, ids[0]!, ids[2]!, 3)]);
    expect(await marks(accountId)).toEqual([]);
  });

  it("stays when the invocation dies between the chunk's put and its batch", async () => {
    const { accountId, ids } = await finished(3);
    await expect(move(T0, bucketKilledAfterPut(accountId))).rejects.toThrow("killed");
    expect(await objects(accountId)).toEqual([historyChunkKey(accountId, ids[0]!, ids[2]!, 3)]);
    expect(await indexed(accountId)).toEqual([]);
    expect(await marks(accountId)).toEqual([{ first_id: ids[0], last_id: ids[2] }]);
  });
});

describe("removing unindexed chunks (the archive sweep)", () => {
  it("deletes a killed move's chunk whose records moved since under another key", async () => {
    const { token, accountId, fn, ids } = await finished(3);
    await expect(move(T0, bucketKilledAfterPut(accountId))).rejects.toThrow("killed");
    const orphan = historyChunkKey(accountId, ids[0]!, ids[2]!, 3);
    // Two more finish before the next run, which moves all five in one chunk of another name.
    for (let i = 0; i < 2; i++) {
      const id = await newTask(token, fn);
      await finishTask(id);
      ids.push(id);
    }
    await move(T0 + 20 * 60_000);
    const kept = historyChunkKey(accountId, ids[0]!, ids[4]!, 5);
    expect(await indexed(accountId)).toEqual([kept]);
    expect(await objects(accountId)).toEqual([orphan, kept].sort());

    await sweep(T0 + 30 * 60_000); // its run might still be going
    expect(await objects(accountId)).toContain(orphan);
    expect(await sweep(T0 + 2 * HOUR_MS)).toBeGreaterThanOrEqual(1);
    expect(await objects(accountId)).toEqual([kept]);
    expect(await marks(accountId)).toEqual([]);
    const list = await callJson<{ id: string }[]>(`/v1/task/list?limit=10`, 200, { token });
    expect(list.map((t) => t.id)).toEqual([...ids].reverse());
    expect(await (await call(`/v1/task/${ids[0]}/result`, { token })).text()).toBe(`result of ${ids[0]}`);
  });

  it("keeps a chunk whose records are still in D1, which the next move writes again and indexes", async () => {
    const { token, accountId, ids } = await finished(3);
    await expect(move(T0, bucketKilledAfterPut(accountId))).rejects.toThrow("killed");
    const key = historyChunkKey(accountId, ids[0]!, ids[2]!, 3);
    await sweep(T0 + 2 * HOUR_MS);
    expect(await objects(accountId)).toEqual([key]);
    expect(await marks(accountId)).toHaveLength(1);

    await move(T0 + 3 * HOUR_MS);
    expect(await indexed(accountId)).toEqual([key]);
    await sweep(T0 + 4 * HOUR_MS);
    expect(await objects(accountId)).toEqual([key]);
    expect(await marks(accountId)).toEqual([]);
    for (const id of ids) expect(await callJson(`/v1/task/${id}`, 200, { token })).toMatchObject({ id, status: 200 });
  });

  it("deletes a deleted account's unindexed chunk", async () => {
    const { accountId } = await finished(2);
    await expect(move(T0, bucketKilledAfterPut(accountId))).rejects.toThrow("killed");
    expect(await objects(accountId)).toHaveLength(1);
    await env.DB.prepare("delete from accounts where id = ?").bind(accountId).run();
    expect(await sweep(T0 + 2 * HOUR_MS)).toBeGreaterThanOrEqual(1);
    expect(await objects(accountId)).toEqual([]);
    expect(await marks(accountId)).toEqual([]);
  });

  it("runs in each archive sweep, in at most three D1 queries", async () => {
    const { accountId } = await finished(3);
    await expect(move(T0, bucketKilledAfterPut(accountId))).rejects.toThrow("killed");
    await env.DB.prepare("delete from tasks where account_id = ?").bind(accountId).run(); // as if they moved under other keys
    const budget = new QueryBudget(1000);
    expect(await removeUnindexedChunks(db(), env.BUCKET, T0 + 2 * HOUR_MS, budget)).toBeGreaterThanOrEqual(1);
    expect(1000 - budget.left()).toBe(UNINDEXED_MAX_QUERIES);
    expect(await objects(accountId)).toEqual([]);

    const again = await finished(2);
    await expect(move(T0, bucketKilledAfterPut(again.accountId))).rejects.toThrow("killed");
    await env.DB.prepare("delete from tasks where account_id = ?").bind(again.accountId).run();
    await runCron(ARCHIVE_CRON, T0 + 2 * HOUR_MS);
    expect(await objects(again.accountId)).toEqual([]);
  });
});

describe("a creation sent again (a trigger's firing or a dead letter) of a task whose record moved to the archive", () => {
  it("answers the archived task and creates, queues and meters nothing", async () => {
    const { token, accountId, fn, ids } = await finished(1);
    const id = ids[0]!;
    await move(T0);
    expect(await env.DB.prepare("select 1 from tasks where id = ?").bind(id).first()).toBeNull();
    const usage = await callJson<{ invocations: number }>("/v1/usage", 200, { token });
    const agent = await FakeAgent.connect("resent-archived");

    const answer = await dispatcherFor(bindings, fn).createTask({
      id,
      accountId,
      functionId: fn,
      input: { method: "POST", query: {}, headers: {}, body: null },
      staged: { id, input: "{}", inputKey: null },
      now: Date.now(),
      mayExist: true,
    });
    expect(answer).toMatchObject({ task: { id, status: 200, finishedAt: expect.any(Number) }, finished: { id, resultBody: `result of ${id}` } });
    expect(await agent.none("task.assign", 300)).toBe(true);
    await recordsFlushed();
    expect(await env.DB.prepare("select 1 from tasks where id = ?").bind(id).first()).toBeNull();
    expect(await callJson("/v1/usage", 200, { token })).toEqual(usage);
    expect((await callJson<{ id: string }[]>("/v1/task/list", 200, { token })).map((t) => t.id)).toEqual([id]);
  });
});
