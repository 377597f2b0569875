import { env, runInDurableObject } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import { SWEEP_CRON } from "../../worker/crons.js";
import { shardStub } from "../../worker/dispatch/client.js";
import { ORPHAN_AFTER_MS, ORPHAN_LOG_LINE } from "../../worker/services/orphans.js";
import { call, callJson, clearQueue, deployedFunction, newAccount, newTask, runCron, sql } from "./helpers.js";

beforeEach(clearQueue);

/** The Worker went between the task's insert and its enqueue: its shard never had it. */
const neverQueued = (id: string) =>
  runInDurableObject(shardStub(env, 0), async (instance, state) => {
    state.storage.sql.exec("delete from work where id = ?", id);
    await instance.resync();
  });

const issuedAgo = (id: string, ms: number) => sql("update tasks set issued_at = ? where id = ?", Date.now() - ms, id);

describe("orphan sweep (hourly Cron Trigger)", () => {
  it("fails a task recorded but never queued, once it is old enough, and frees its place; what a shard holds stays pending", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token); // no agent: every task waits in its queue
    const [orphan, queued, recent, planned] = [await newTask(token, fn), await newTask(token, fn), await newTask(token, fn), await newTask(token, fn)];
    await neverQueued(orphan);
    await neverQueued(recent);
    await neverQueued(planned);
    // A trigger firing still to finish has issued `planned` and not queued it yet.
    await runInDurableObject(shardStub(env, 0), (_o, state) => {
      state.storage.sql.exec("insert into chain_due (parent_id, parent, plan) values (?, ?, ?)", "parent-x", "{}", JSON.stringify({ t: planned }));
    });
    for (const id of [orphan, queued, planned]) await issuedAgo(id, ORPHAN_AFTER_MS + 60_000);
    await issuedAgo(recent, ORPHAN_AFTER_MS - 60_000);
    expect((await callJson(`/v1/function/${fn}`, 200, { token })).metrics.pendingTasks).toBe(4);

    await runCron(SWEEP_CRON, Date.now());

    expect(await callJson(`/v1/task/${orphan}`, 200, { token })).toMatchObject({ status: 500, progress: 100 });
    expect(await callJson(`/v1/task/${orphan}/log`, 200, { token })).toEqual({ id: orphan, finished: true, log: [ORPHAN_LOG_LINE] });
    const res = await call(`/v1/task/${orphan}/result`, { token });
    expect([res.status, ((await res.json()) as { error: { code: string } }).error.code]).toEqual([500, "no_result"]);
    for (const id of [queued, recent, planned]) expect((await callJson(`/v1/task/${id}`, 200, { token })).progress).toBeLessThan(100);
    expect((await callJson(`/v1/function/${fn}`, 200, { token })).metrics.pendingTasks).toBe(3);
    await runInDurableObject(shardStub(env, 0), (_o, state) => void state.storage.sql.exec("delete from chain_due"));
  });
});
