import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SWEEP_CRON } from "../../worker/crons.js";
import { INLINE_LOG_BYTES, INLINE_RESULT_BYTES } from "../../worker/dispatch/records.js";
import { DAY_MS } from "../../worker/lib/time.js";
import { taskInputKey, taskLogKey, taskResultKey } from "../../worker/lib/storage-keys.js";
import { call, callJson, clearQueue, deployedFunction, expectError, newAccount, runCron, flushedDb } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const row = async (id: string) => (await flushedDb()).prepare("select * from tasks where id = ?").bind(id).first<Record<string, unknown>>();
const stored = async (key: string) => (await env.BUCKET.head(key)) !== null;

/**
 * The sweep with the archive's window far away: these tests read D1's rows as retention leaves them.
 * Retention of archived records, which the sweep also moves after 8 days, is task-history.test.ts's.
 */
const sweep = (scheduledTime: number) => runCron(SWEEP_CRON, scheduledTime, { TASK_ARCHIVE_AFTER_HOURS: "87600" });

/** Runs one task through a fake agent with the given result body and log; returns its id once recorded. */
async function ran(agent: FakeAgent, token: string, fn: string, o: { input?: unknown; body: string; log: string[] }) {
  const { id } = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: o.input ?? {} });
  await agent.next("task.assign");
  agent.done(id, o.body, 200, { log: o.log });
  expect((await call(`/v1/task/${id}/result?wait=5`, { token })).status).toBe(200);
  return id;
}

const bigLog = Array.from({ length: 100 }, (_, i) => `line ${i} ${"x".repeat(80)}`);
const bigBody = "y".repeat(INLINE_RESULT_BYTES + 1);

describe("where results and logs are kept", () => {
  it("keeps small ones in the task row and puts larger ones in R2, read back the same", async () => {
    expect(JSON.stringify(bigLog).length).toBeGreaterThan(INLINE_LOG_BYTES);
    const agent = await FakeAgent.connect("keeper");
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    const small = await ran(agent, token, fn, { body: "small", log: ["one line"] });
    const large = await ran(agent, token, fn, { body: bigBody, log: bigLog });
    expect(await row(small)).toMatchObject({ result_body: "small", result_key: null, log: '["one line"]', log_key: null });
    expect(await row(large)).toMatchObject({ result_body: null, result_key: taskResultKey(accountId, large), log: null, log_key: taskLogKey(accountId, large) });
    expect(await (await call(`/v1/task/${large}/result`, { token })).text()).toBe(bigBody);
    expect((await callJson(`/v1/task/${large}/log`, 200, { token })).log).toEqual(bigLog);
    expect((await callJson(`/v1/task/${small}/log`, 200, { token })).log).toEqual(["one line"]);
  });
});

describe("retention sweep (hourly Cron Trigger)", () => {
  it("deletes a finished task's input, result and log after the retention period; reads then answer 410", async () => {
    const agent = await FakeAgent.connect("retained");
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    const large = await ran(agent, token, fn, { input: { pad: "z".repeat(70 * 1024) }, body: bigBody, log: bigLog });
    const small = await ran(agent, token, fn, { body: "small", log: ["one line"] });
    const keys = [taskInputKey(accountId, large), taskResultKey(accountId, large), taskLogKey(accountId, large)];
    for (const key of keys) expect(await stored(key), key).toBe(true);
    const { id: pending } = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: { still: "queued" } });
    const finishedAt = (await row(large))!.finished_at as number;

    await sweep(finishedAt + 29 * DAY_MS); // within the 30 days of wrangler.toml: nothing goes
    expect(await (await call(`/v1/task/${large}/result`, { token })).text()).toBe(bigBody);
    expect((await row(large))!.purged_at).toBeNull();

    const later = finishedAt + 31 * DAY_MS;
    await sweep(later);
    for (const id of [large, small]) {
      await expectError(call(`/v1/task/${id}/result`, { token }), 410, "expired");
      await expectError(call(`/v1/task/${id}/log`, { token }), 410, "expired");
      expect(await callJson(`/v1/task/${id}`, 200, { token })).toMatchObject({ id, status: 200, progress: 100 }); // the record stays
      expect(await row(id)).toMatchObject({
        input: null, input_key: null, result_headers: null, result_body: null, result_key: null, log: null, log_key: null, purged_at: later,
      });
    }
    for (const key of keys) expect(await stored(key), key).toBe(false);
    // An unfinished task keeps its input, however old.
    expect(await row(pending)).toMatchObject({ finished_at: null, purged_at: null, input: expect.stringContaining("queued") });
    await sweep(later + DAY_MS); // again: nothing left to do, nothing changes
    expect((await row(large))!.purged_at).toBe(later);
  });

  it("reads only the tasks it purges, through an index of the unpurged", async () => {
    const plan = await (await flushedDb()).prepare("explain query plan select id from tasks where finished_at < ? and purged_at is null order by finished_at limit 300").bind(1).all<{ detail: string }>();
    expect(plan.results.map((r) => r.detail)).toEqual(["SEARCH tasks USING INDEX tasks_unpurged (finished_at<?)"]);
  });
});
