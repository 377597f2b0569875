import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, describe, expect, it } from "vitest";
import { callJson, clearQueue, deployedFunction, newAccount, flushedDb } from "./helpers.js";
import { schedulerFor } from "../../worker/schedules/client.js";
import type { Scheduler } from "../../worker/schedules/durable-object.js";
import { closeFailureWindow, openFailureWindow, type FailureMode } from "../../worker/db/d1-trouble.js";

/**
 * A schedule's due run while D1 fails (worker/db/d1-trouble.ts): the scheduler reads its schedule,
 * and D1 then fails on the task's insert, the window opened with `after: 1`. The scheduler runs
 * with the test control's binding and a clock the test sets, as in scheduled-alarms.test.ts.
 */
const used = new Set<string>();

async function dueSchedule() {
  const { token } = await newAccount();
  const fn = await deployedFunction(token);
  const { id } = await callJson<{ id: string }>("/v1/scheduled", 201, { token, json: { functionId: fn, cron: "* * * * *", timezone: "UTC" } });
  used.add(id);
  const stub = schedulerFor(env, id);
  const due = (await runInDurableObject(stub, (_o, state) => state.storage.getAlarm()))!;
  await runInDurableObject(stub, (o) => {
    const s = o as Scheduler & { env: Record<string, unknown> };
    s.now = () => due + 5_000;
    s.env = { ...s.env, D1_TEST_FAILURES: "1" };
  });
  return { id, stub, due };
}

/** Opens the window in the scheduler's own isolate, letting its schedule read through first. */
const failAfterRead = (stub: DurableObjectStub, mode: FailureMode) => runInDurableObject(stub, () => openFailureWindow(60_000, mode, 1));
const heal = (stub: DurableObjectStub) => runInDurableObject(stub, () => closeFailureWindow());
const tasksOf = async (scheduleId: string) => (await (await flushedDb()).prepare("select id from tasks where scheduled_id = ?").bind(scheduleId).all<{ id: string }>()).results;

afterEach(async () => {
  closeFailureWindow();
  for (const id of used)
    await runInDurableObject(schedulerFor(env, id), async (o, state) => {
      (o as Scheduler).now = () => Date.now();
      await state.storage.deleteAlarm();
    });
  used.clear();
  await clearQueue();
});

describe("a due schedule while D1 fails", () => {
  it("issues the run in its function's shard, which writes nothing to D1 on the way: once, whatever D1 does", async () => {
    const { id, stub } = await dueSchedule();
    await failAfterRead(stub, "refuse");
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const issued = await tasksOf(id);
    expect(issued).toHaveLength(1);
    await heal(stub);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await tasksOf(id)).toEqual(issued);
  });

  it("issues a run whose insert landed but whose answer was lost once, not twice", async () => {
    const { id, stub } = await dueSchedule();
    await failAfterRead(stub, "lose_answer");
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    const landed = await tasksOf(id);
    expect(landed).toHaveLength(1);
    await heal(stub);
    expect(await runDurableObjectAlarm(stub)).toBe(true);
    expect(await tasksOf(id)).toEqual(landed);
  });
});
