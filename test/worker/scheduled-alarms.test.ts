import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { call, callJson, clearQueue, deployedFunction, expectNoContent, newAccount, flushedDb } from "./helpers.js";
import { schedulerFor } from "../../worker/schedules/client.js";
import type { Scheduler } from "../../worker/schedules/durable-object.js";

const MINUTE = 60_000;

async function everyMinute(cron = "* * * * *") {
  const { token, accountId } = await newAccount();
  const fn = await deployedFunction(token);
  const { id } = await callJson<{ id: string }>("/v1/scheduled", 201, { token, json: { functionId: fn, cron, timezone: "Europe/London" } });
  return { token, accountId, fn, id };
}

/** The scheduler's stored watermark: everything up to it has run or was passed over. */
const watermarkOf = (id: string) =>
  runInDurableObject(schedulerFor(env, id), (_o, state) => state.storage.sql.exec<{ watermark: number }>("select watermark from state").one().watermark);

const clocked = new Set<string>();

/** Sets the scheduler's clock: the tests move time instead of waiting for it. */
const setClock = (id: string, now: number) => {
  clocked.add(id);
  return runInDurableObject(schedulerFor(env, id), (o) => {
    (o as Scheduler).now = () => now;
  });
};

const alarmAt = (id: string) => runInDurableObject(schedulerFor(env, id), (_o, state) => state.storage.getAlarm());

const tasksOf = async (scheduleId: string) =>
  (await (await flushedDb()).prepare("select id, status, input from tasks where scheduled_id = ? order by id").bind(scheduleId).all<{ id: string; status: number; input: string }>()).results;

afterEach(async () => {
  // A timer left with a stopped clock would find its real alarm early again and again.
  for (const id of clocked)
    await runInDurableObject(schedulerFor(env, id), async (o, state) => {
      (o as Scheduler).now = () => Date.now();
      await state.storage.deleteAlarm();
    });
  clocked.clear();
  await clearQueue();
});

describe("a schedule's timer", () => {
  it("is armed for the next matching minute when the schedule is created", async () => {
    const { id } = await everyMinute();
    const from = await watermarkOf(id);
    const alarm = await alarmAt(id);
    expect(alarm! % MINUTE).toBe(0);
    expect(alarm! - from).toBeGreaterThan(0);
    expect(alarm! - from).toBeLessThanOrEqual(MINUTE);
  });

  it("issues nothing before the due minute, even when its alarm is delivered early", async () => {
    const { id } = await everyMinute();
    await setClock(id, await watermarkOf(id));
    expect(await runDurableObjectAlarm(schedulerFor(env, id))).toBe(true);
    expect(await tasksOf(id)).toEqual([]);
  });
});

describe("a due schedule", () => {
  it("issues exactly one task with its payload, even when its alarm runs twice", async () => {
    const { token, id } = await everyMinute();
    await expectNoContent(call(`/v1/scheduled/${id}/payload?from=cron`, { token, method: "PUT", body: "tick", headers: { "content-type": "text/plain" } }));
    const due = (await alarmAt(id))!;
    await setClock(id, due + 5_000);
    const stub = schedulerFor(env, id);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const issued = await tasksOf(id);
    expect(issued).toHaveLength(1);
    expect(JSON.parse(issued[0]!.input)).toEqual({ method: "POST", query: { from: "cron" }, headers: { "content-type": "text/plain" }, body: "tick" });
    expect(await callJson(`/v1/task/${issued[0]!.id}`, 200, { token })).toMatchObject({ scheduledId: id, status: 0 });
    // And the next alarm is the minute after.
    expect(await alarmAt(id)).toBe(due + MINUTE);
  });

  it("fires once for a window missed while the service was down, not once per missed minute", async () => {
    const { id } = await everyMinute();
    const due = (await alarmAt(id))!;
    await setClock(id, due + 90 * MINUTE + 30_000);
    await runDurableObjectAlarm(schedulerFor(env, id));
    await runDurableObjectAlarm(schedulerFor(env, id));
    expect(await tasksOf(id)).toHaveLength(1);
    expect(await alarmAt(id)).toBe(due + 91 * MINUTE);
  });

  it("issues one task a minute as the minutes pass", async () => {
    const { id } = await everyMinute();
    const due = (await alarmAt(id))!;
    for (let m = 0; m < 3; m++) {
      await setClock(id, due + m * MINUTE + 1_000);
      await runDurableObjectAlarm(schedulerFor(env, id));
    }
    expect(await tasksOf(id)).toHaveLength(3);
  });

  it("of a paused function issues its task, which waits pending like any other", async () => {
    const { token, fn, id } = await everyMinute();
    await expectNoContent(call(`/v1/function/${fn}/togglePause`, { token, method: "POST" }));
    await setClock(id, (await alarmAt(id))! + 1_000);
    await runDurableObjectAlarm(schedulerFor(env, id));
    expect((await tasksOf(id)).map((t) => t.status)).toEqual([0]);
  });

  it("issues runs only while the plan has invocations left, as the task API would", async () => {
    const { accountId, id } = await everyMinute();
    await callJson(`/v1/admin/accounts/${accountId}`, 204, { token: "test-admin-token", method: "PATCH", json: { plan: "TINY" } });
    const due = (await alarmAt(id))!;
    for (let m = 0; m < 4; m++) {
      await setClock(id, due + m * MINUTE + 1_000);
      await runDurableObjectAlarm(schedulerFor(env, id));
    }
    // TINY holds 2 invocations; unfinished tasks reserve them.
    expect(await tasksOf(id)).toHaveLength(2);
  });
});

describe("a schedule that must not run", () => {
  it("issues nothing while inactive, and resumes from the edit when activated again", async () => {
    const { token, id } = await everyMinute();
    const due = (await alarmAt(id))!;
    await expectNoContent(call(`/v1/scheduled/${id}`, { token, method: "PATCH", json: { active: false, cron: "* * * * *", timezone: "UTC" } }));
    expect(await alarmAt(id)).toBeNull();
    // An alarm still in flight when it was deactivated finds it inactive.
    await runInDurableObject(schedulerFor(env, id), (_o, state) => state.storage.setAlarm(due));
    await setClock(id, due + 10 * MINUTE);
    await runDurableObjectAlarm(schedulerFor(env, id));
    expect(await tasksOf(id)).toEqual([]);
    await expectNoContent(call(`/v1/scheduled/${id}`, { token, method: "PATCH", json: { active: true, cron: "* * * * *", timezone: "UTC" } }));
    expect(await alarmAt(id)).toBe(due + 11 * MINUTE);
  });

  it("stops at once when the schedule is deleted", async () => {
    const { token, id } = await everyMinute();
    const due = (await alarmAt(id))!;
    await expectNoContent(call(`/v1/scheduled/${id}`, { token, method: "DELETE" }));
    expect(await alarmAt(id)).toBeNull();
    await runInDurableObject(schedulerFor(env, id), (_o, state) => state.storage.setAlarm(due));
    await setClock(id, due + 1_000);
    await runDurableObjectAlarm(schedulerFor(env, id));
    expect(await tasksOf(id)).toEqual([]);
  });

  it("stops at once when its function is deleted, though its timer was never told", async () => {
    const { token, fn, id } = await everyMinute();
    const due = (await alarmAt(id))!;
    await expectNoContent(call(`/v1/function/${fn}`, { token, method: "DELETE" }));
    await setClock(id, due + 1_000);
    expect(await runDurableObjectAlarm(schedulerFor(env, id))).toBe(true);
    expect(await tasksOf(id)).toEqual([]);
    // The timer forgot the schedule: no further alarm.
    expect(await alarmAt(id)).toBeNull();
  });
});
