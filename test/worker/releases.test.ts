import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  call,
  callDirect,
  callJson,
  clearQueue,
  expectError,
  expectNoContent,
  markBuild,
  newAccount,
  newEndpoint,
  newFunction,
  newTask,
  newTrigger,
  uploadBuild, flushedDb } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";
import { openDb } from "../../worker/db/client.js";
import { protectedBuildIds } from "../../worker/releases/resolve.js";
import { schedulerFor } from "../../worker/schedules/client.js";
import type { Scheduler } from "../../worker/schedules/durable-object.js";

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

/** A function with `n` successful builds, oldest first. */
async function withBuilds(n: number, token?: string) {
  const acct = token ? { token } : await newAccount();
  const fn = await newFunction(acct.token);
  const builds: string[] = [];
  for (let i = 0; i < n; i++) {
    const { id } = await uploadBuild(acct.token, fn);
    await markBuild(id);
    builds.push(id);
  }
  return { token: acct.token, fn, builds };
}

const release = (token: string, fn: string) => callJson(`/v1/function/${fn}/release`, 200, { token });
const putRelease = (token: string, fn: string, json: unknown) => call(`/v1/function/${fn}/release`, { token, method: "PUT", json });
const rollback = (token: string, fn: string) => call(`/v1/function/${fn}/rollback`, { token, method: "POST" });
const taskBuild = async (token: string, id: string) => (await callJson(`/v1/task/${id}`, 200, { token })).buildId as string;

describe("GET /v1/function/<id>/release", () => {
  it("answers null before any successful build, then follows the newest", async () => {
    const { token, fn } = await withBuilds(0);
    expect(await release(token, fn)).toEqual({ buildId: null, pinned: false, canary: null });
    const { id: failed } = await uploadBuild(token, fn);
    await markBuild(failed, "FAILED");
    expect(await release(token, fn)).toEqual({ buildId: null, pinned: false, canary: null });
    const { id: first } = await uploadBuild(token, fn);
    await markBuild(first);
    expect(await release(token, fn)).toEqual({ buildId: first, pinned: false, canary: null });
    const { id: second } = await uploadBuild(token, fn);
    expect(await release(token, fn)).toEqual({ buildId: first, pinned: false, canary: null });
    await markBuild(second);
    expect(await release(token, fn)).toEqual({ buildId: second, pinned: false, canary: null });
  });

  it("answers 404 for an unknown function and another account's", async () => {
    const { fn } = await withBuilds(1);
    const { token } = await newAccount("other");
    await expectError(call(`/v1/function/${fn}/release`, { token }), 404, "not_found");
    await expectError(call(`/v1/function/nosuchfunction/release`, { token }), 404, "not_found");
  });
});

describe("PUT /v1/function/<id>/release", () => {
  it("pins a build: new tasks run it, a newer build changes nothing, and null follows the newest again", async () => {
    const { token, fn, builds } = await withBuilds(2);
    await expectNoContent(putRelease(token, fn, { buildId: builds[0] }));
    expect(await release(token, fn)).toEqual({ buildId: builds[0], pinned: true, canary: null });
    expect(await taskBuild(token, await newTask(token, fn))).toBe(builds[0]);
    const { id: third } = await uploadBuild(token, fn);
    await markBuild(third);
    expect(await release(token, fn)).toMatchObject({ buildId: builds[0], pinned: true });
    expect(await taskBuild(token, await newTask(token, fn))).toBe(builds[0]);
    await expectNoContent(putRelease(token, fn, { buildId: null }));
    expect(await release(token, fn)).toEqual({ buildId: third, pinned: false, canary: null });
    expect(await taskBuild(token, await newTask(token, fn))).toBe(third);
  });

  it("keeps the build a task was issued with when the release changes before it runs", async () => {
    const { token, fn, builds } = await withBuilds(2);
    const before = await newTask(token, fn);
    await expectNoContent(putRelease(token, fn, { buildId: builds[0] }));
    expect(await taskBuild(token, before)).toBe(builds[1]);
    expect(await taskBuild(token, await newTask(token, fn))).toBe(builds[0]);
  });

  it("sets a canary beside a pin or beside the newest, and a PUT without one removes it", async () => {
    const { token, fn, builds } = await withBuilds(3);
    await expectNoContent(putRelease(token, fn, { buildId: builds[0], canary: { buildId: builds[2], weight: 10 } }));
    expect(await release(token, fn)).toEqual({ buildId: builds[0], pinned: true, canary: { buildId: builds[2], weight: 10 } });
    await expectNoContent(putRelease(token, fn, { buildId: null, canary: { buildId: builds[1], weight: 99 } }));
    expect(await release(token, fn)).toEqual({ buildId: builds[2], pinned: false, canary: { buildId: builds[1], weight: 99 } });
    await expectNoContent(putRelease(token, fn, { buildId: builds[1], canary: null }));
    expect(await release(token, fn)).toEqual({ buildId: builds[1], pinned: true, canary: null });
    await expectNoContent(putRelease(token, fn, { buildId: builds[1], canary: { buildId: builds[0], weight: 1 } }));
    await expectNoContent(putRelease(token, fn, { buildId: builds[1] }));
    expect(await release(token, fn)).toEqual({ buildId: builds[1], pinned: true, canary: null });
  });

  it("sends about the canary's weight of new tasks to the canary build, the rest to the pinned one", async () => {
    const { token, fn, builds } = await withBuilds(2);
    await expectNoContent(putRelease(token, fn, { buildId: builds[1], canary: { buildId: builds[0], weight: 25 } }));
    const n = 400;
    const ran = new Map<string, number>();
    for (let i = 0; i < n; i++) {
      const res = await callDirect(`/v1/task/${fn}`, { token, method: "POST" });
      expect(res.status).toBe(201);
      const { id } = (await res.json()) as { id: string };
      const row = await (await flushedDb()).prepare("select build_id from tasks where id = ?").bind(id).first<{ build_id: string }>();
      ran.set(row!.build_id, (ran.get(row!.build_id) ?? 0) + 1);
    }
    expect([...ran.keys()].sort()).toEqual([...builds].sort());
    // Binomial(400, 0.25): mean 100, standard deviation 8.7; ±50 is more than 5.7 deviations.
    const canary = ran.get(builds[0]!)!;
    expect(canary).toBeGreaterThanOrEqual(50);
    expect(canary).toBeLessThanOrEqual(150);
  });

  it("answers 409 build_not_ready for a build not yet successful, failed, or of another function, and changes nothing", async () => {
    const { token, fn, builds } = await withBuilds(1);
    const { id: pending } = await uploadBuild(token, fn);
    const { id: failed } = await uploadBuild(token, fn);
    await markBuild(failed, "FAILED");
    const other = await withBuilds(1, token);
    for (const body of [
      { buildId: pending },
      { buildId: failed },
      { buildId: other.builds[0] },
      { buildId: builds[0], canary: { buildId: pending, weight: 5 } },
      { buildId: null, canary: { buildId: other.builds[0], weight: 5 } },
    ]) {
      const err = await expectError(putRelease(token, fn, body), 409, "build_not_ready");
      expect(err.message).toMatch(/PENDING|FAILED|another function|of function/);
    }
    expect(await release(token, fn)).toEqual({ buildId: builds[0], pinned: false, canary: null });
  });

  it("answers 404 for an unknown build, another account's build, and another account's function", async () => {
    const mine = await withBuilds(2);
    const theirs = await withBuilds(1);
    await expectError(putRelease(mine.token, mine.fn, { buildId: "nosuchbuild" }), 404, "not_found");
    await expectError(putRelease(mine.token, mine.fn, { buildId: theirs.builds[0] }), 404, "not_found");
    await expectError(putRelease(mine.token, mine.fn, { buildId: mine.builds[0], canary: { buildId: theirs.builds[0], weight: 50 } }), 404, "not_found");
    await expectError(putRelease(mine.token, theirs.fn, { buildId: theirs.builds[0] }), 404, "not_found");
    await expectError(rollback(mine.token, theirs.fn), 404, "not_found");
    expect(await release(mine.token, mine.fn)).toEqual({ buildId: mine.builds[1], pinned: false, canary: null });
    expect(await release(theirs.token, theirs.fn)).toEqual({ buildId: theirs.builds[0], pinned: false, canary: null });
  });

  it("answers 400 naming the field for unknown fields, a missing buildId, a weight outside 1–99 and a canary equal to what runs", async () => {
    const { token, fn, builds } = await withBuilds(2);
    const cases: [unknown, string][] = [
      [{ buildId: builds[0], pinned: true }, "pinned"],
      [{}, "buildId"],
      [{ buildId: 5 }, "buildId"],
      [{ buildId: builds[0], canary: { buildId: builds[1], weight: 0 } }, "canary.weight"],
      [{ buildId: builds[0], canary: { buildId: builds[1], weight: 100 } }, "canary.weight"],
      [{ buildId: builds[0], canary: { buildId: builds[1], weight: 12.5 } }, "canary.weight"],
      [{ buildId: builds[0], canary: { buildId: builds[1] } }, "canary.weight"],
      [{ buildId: builds[0], canary: { buildId: builds[1], weight: 5, sticky: true } }, "canary.sticky"],
      [{ buildId: builds[0], canary: { buildId: builds[0], weight: 5 } }, "canary.buildId"],
      [{ buildId: null, canary: { buildId: builds[1], weight: 5 } }, "canary.buildId"],
    ];
    for (const [body, field] of cases) {
      const err = await expectError(putRelease(token, fn, body), 400, "validation_failed");
      expect(err.details?.map((d) => d.field), JSON.stringify(body)).toContain(field);
    }
    await expectError(call(`/v1/function/${fn}/release`, { token, method: "PUT", body: "{", headers: { "content-type": "application/json" } }), 400, "invalid_json");
    expect(await release(token, fn)).toEqual({ buildId: builds[1], pinned: false, canary: null });
  });
});

describe("POST /v1/function/<id>/rollback", () => {
  it("pins the successful build before the one that runs now, skipping failed ones, and drops the canary", async () => {
    const { token, fn, builds } = await withBuilds(2);
    const { id: failed } = await uploadBuild(token, fn);
    await markBuild(failed, "FAILED");
    const { id: last } = await uploadBuild(token, fn);
    await markBuild(last);
    await expectNoContent(putRelease(token, fn, { buildId: null, canary: { buildId: builds[1], weight: 20 } }));
    expect(await callJson(`/v1/function/${fn}/rollback`, 200, { token, method: "POST" })).toEqual({ buildId: builds[1], pinned: true, canary: null });
    expect(await release(token, fn)).toEqual({ buildId: builds[1], pinned: true, canary: null });
    expect(await taskBuild(token, await newTask(token, fn))).toBe(builds[1]);
    expect(await callJson(`/v1/function/${fn}/rollback`, 200, { token, method: "POST" })).toEqual({ buildId: builds[0], pinned: true, canary: null });
    const err = await expectError(rollback(token, fn), 409, "no_previous_build");
    expect(err.message).toContain(builds[0]);
    expect(await release(token, fn)).toEqual({ buildId: builds[0], pinned: true, canary: null });
  });

  it("answers 409 when the function has no successful build, or only one", async () => {
    const { token, fn } = await withBuilds(0);
    await expectError(rollback(token, fn), 409, "no_successful_build");
    const { id } = await uploadBuild(token, fn);
    await markBuild(id);
    await expectError(rollback(token, fn), 409, "no_previous_build");
    expect(await release(token, fn)).toEqual({ buildId: id, pinned: false, canary: null });
  });
});

describe("which build a task runs", () => {
  it("triggers, schedules and public endpoints follow the release, and the agent is handed that build's artifact", async () => {
    const agent = await FakeAgent.connect("releases");
    const { token } = await newAccount();
    const first = await withBuilds(1, token);
    const next = await withBuilds(2, token);
    await expectNoContent(putRelease(token, next.fn, { buildId: next.builds[0] }));
    await newTrigger(token, { functionId: first.fn, nextId: next.fn });

    const { id: parent } = await callJson(`/v1/task/${first.fn}`, 201, { token, method: "POST" });
    expect(await agent.next("task.assign")).toMatchObject({ taskId: parent, buildId: first.builds[0] });
    agent.done(parent, "ok");
    const chained = await agent.next("task.assign");
    expect(chained).toMatchObject({ functionId: next.fn, buildId: next.builds[0], artifactPath: `/v1/agent/builds/${next.builds[0]}/artifact` });
    expect(await taskBuild(token, chained.taskId)).toBe(next.builds[0]);

    const { id: schedule } = await callJson("/v1/scheduled", 201, { token, json: { functionId: next.fn, cron: "0 0 1 1 *", timezone: "UTC" } });
    const { id: scheduled } = await callJson(`/v1/scheduled/${schedule}/try`, 201, { token, method: "POST" });
    expect(await taskBuild(token, scheduled)).toBe(next.builds[0]);

    const endpoint = await newEndpoint(token, next.fn);
    const { id: publicTask } = await callJson(`/gc/${endpoint}`, 201, { method: "POST", json: {} });
    expect(await taskBuild(token, publicTask)).toBe(next.builds[0]);
    await agent.close();
  });
});

describe("a schedule's timer", () => {
  it("issues its due run with the release's build", async () => {
    const { token, fn, builds } = await withBuilds(2);
    await expectNoContent(putRelease(token, fn, { buildId: builds[0] }));
    const { id } = await callJson("/v1/scheduled", 201, { token, json: { functionId: fn, cron: "* * * * *", timezone: "UTC" } });
    const timer = schedulerFor(env, id);
    const due = (await runInDurableObject(timer, (_o, state) => state.storage.getAlarm()))!;
    try {
      // The timer's clock is moved to the due minute rather than waited for.
      await runInDurableObject(timer, (o) => void ((o as Scheduler).now = () => due + 1_000));
      expect(await runDurableObjectAlarm(timer)).toBe(true);
      const row = await (await flushedDb()).prepare("select build_id from tasks where scheduled_id = ?").bind(id).first<{ build_id: string }>();
      expect(row?.build_id).toBe(builds[0]);
    } finally {
      await runInDurableObject(timer, async (o, state) => {
        (o as Scheduler).now = () => Date.now();
        await state.storage.deleteAlarm();
      });
    }
  });
});

describe("protectedBuildIds (for artifact eviction)", () => {
  it("returns the pinned and canary builds, and none for a function that follows its newest build", async () => {
    const { token, fn, builds } = await withBuilds(3);
    const db = openDb(env);
    expect(await protectedBuildIds(db, fn)).toEqual([]);
    await expectNoContent(putRelease(token, fn, { buildId: builds[0], canary: { buildId: builds[1], weight: 50 } }));
    expect(await protectedBuildIds(db, fn)).toEqual([builds[0], builds[1]]);
    await expectNoContent(putRelease(token, fn, { buildId: null, canary: { buildId: builds[0], weight: 50 } }));
    expect(await protectedBuildIds(db, fn)).toEqual([builds[0]]);
    await expectNoContent(putRelease(token, fn, { buildId: null }));
    expect(await protectedBuildIds(db, fn)).toEqual([]);
  });
});

describe("DELETE /v1/function/<id>", () => {
  it("deletes the function's release with it", async () => {
    const { token, fn, builds } = await withBuilds(2);
    await expectNoContent(putRelease(token, fn, { buildId: builds[0], canary: { buildId: builds[1], weight: 5 } }));
    await expectNoContent(call(`/v1/function/${fn}`, { token, method: "DELETE" }));
    expect(await (await flushedDb()).prepare("select count(*) as n from releases where function_id = ?").bind(fn).first("n")).toBe(0);
  });
});
