import { afterAll, beforeEach, describe, expect, it } from "vitest";
import { call, callJson, clearQueue, deployedFunction, expectError, finishTaskInD1, newAccount, newEndpoint, newFunction, newTask, recountShardIssues, shardsCountIssuesFrom, sql, uploadBuild } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";
import { fleetCounts } from "../../worker/services/platform-metrics.js";

const DAY = 86_400_000;
const startOfUtcDay = (t: number) => t - (t % DAY);

/**
 * Tasks of one function at known ages, created through the API and then aged and finished as
 * the dispatcher would record them. Returns the ids by role.
 */
async function agedTasks(token: string, fn: string) {
  const now = Date.now();
  const make = async (o: { issuedAt?: number; finished?: boolean }) => {
    const id = await newTask(token, fn);
    if (o.issuedAt !== undefined) await sql("update tasks set issued_at = ? where id = ?", o.issuedAt, id);
    // Aged in D1's row, so finished there too: a record the shard kept, finished a day ago, would
    // be archived by it at once and leave D1 before the recount reads D1's issue times.
    if (o.finished) await finishTaskInD1(id, { finishedAt: Math.max(o.issuedAt ?? now, now - DAY) });
    return id;
  };
  return [
    await make({ finished: true }), //                                        today, week, completed
    await make({}), //                                                         today, week, pending
    await make({ issuedAt: startOfUtcDay(now) }), //                          today, week, pending
    await make({ issuedAt: startOfUtcDay(now) - 1, finished: true }), //      week, completed
    await make({ issuedAt: now - 3 * DAY }), //                               week, pending
    await make({ issuedAt: now - 7 * DAY + 60_000, finished: true }), //      week, completed
    await make({ issuedAt: now - 7 * DAY - 60_000, finished: true }), //      completed
    await make({ issuedAt: now - 30 * DAY }), //                              pending
  ];
}

/**
 * A function's and an endpoint's today and week are counted by D1's rows before the shards began to
 * count issues (migration 0032), and by the shards since: the same answers either way. With the
 * shards counting, the tasks' issue times edited in D1 are counted again in the shard, as it would
 * have counted them then.
 */
const MODES = [
  { mode: "counted from D1's rows (before the shards count issues)", from: () => 9e15, counted: async () => {} },
  { mode: "counted by the shards", from: () => Date.now() - 30 * DAY, counted: recountShardIssues },
];

describe.each(MODES)("task counts, $mode", ({ from, counted }) => {
  // An account's today is the shards' from the first UTC day that begins at their cutover (0033).
  beforeEach(() => shardsCountIssuesFrom(from(), { accountDays: from() }));
  afterAll(() => shardsCountIssuesFrom(Date.now(), { accountDays: Date.now() }));

  describe("function metrics in GET /v1/function/<function_id>", () => {
    it("counts today's (since 00:00 UTC), pending, last-7-days and completed tasks", async () => {
      const { token } = await newAccount();
      const fn = await deployedFunction(token);
      const other = await deployedFunction(token, { name: "other" });
      await newTask(token, other);
      const stranger = await newAccount();
      await newTask(stranger.token, await deployedFunction(stranger.token));

      expect((await callJson(`/v1/function/${fn}`, 200, { token })).metrics).toEqual({ todaysTasks: 0, pendingTasks: 0, weekTasks: 0, completedTasks: 0 });
      await agedTasks(token, fn);
      await counted();
      expect((await callJson(`/v1/function/${fn}`, 200, { token })).metrics).toEqual({ todaysTasks: 3, pendingTasks: 4, weekTasks: 6, completedTasks: 4 });
      expect((await callJson(`/v1/function/${other}`, 200, { token })).metrics).toEqual({ todaysTasks: 1, pendingTasks: 1, weekTasks: 1, completedTasks: 0 });
    });
  });

  describe("GET /v1/endpoint/<endpoint_id>/metrics", () => {
    it("counts the endpoint's tasks: today, pending and last 7 days", async () => {
      const { token } = await newAccount();
      const fn = await deployedFunction(token);
      const ep = await newEndpoint(token, fn);
      const otherEp = await newEndpoint(token, fn);
      const ids = await agedTasks(token, fn);
      // Every aged task but the first came through `ep`; the first through the other endpoint.
      await sql(`update tasks set endpoint_id = ? where id in (${ids.slice(1).map(() => "?").join(",")})`, ep, ...ids.slice(1));
      await sql("update tasks set endpoint_id = ? where id = ?", otherEp, ids[0]);
      await newTask(token, fn); // an API task, through no endpoint
      await counted();

      expect(await callJson(`/v1/endpoint/${ep}/metrics`, 200, { token })).toEqual({ todayTasks: 2, pendingTasks: 4, weekTasks: 5 });
      expect(await callJson(`/v1/endpoint/${otherEp}/metrics`, 200, { token })).toEqual({ todayTasks: 1, pendingTasks: 0, weekTasks: 1 });
    });
  });

  describe("GET /v1/metrics", () => {
    it("counts the caller's pending and completed tasks, today's tasks and pending builds; nodes of the fleet", async () => {
      await clearQueue();
      const { token } = await newAccount();
      const fn = await deployedFunction(token);
      await agedTasks(token, fn);
      await uploadBuild(token, fn); // PENDING
      const stranger = await newAccount("stranger");
      await newTask(stranger.token, await deployedFunction(stranger.token));
      await uploadBuild(stranger.token, await newFunction(stranger.token));
      await counted();

      const none = await callJson("/v1/metrics", 200, { token });
      expect(none).toEqual({ pendingTasks: 4, pendingBuilds: 1, activeNodes: 0, freeNodes: 0, busyNodes: 0, todayTasks: 3, completedTasks: 4 });

      // One agent with one slot takes a task and is busy; one with four slots is free.
      const full = await FakeAgent.connect("metrics-full", { slots: 1 });
      await full.next("task.assign");
      const roomy = await FakeAgent.connect("metrics-roomy", { slots: 16 });
      try {
        const m = await callJson("/v1/metrics", 200, { token });
        expect({ active: m.activeNodes, busy: m.busyNodes, free: m.freeNodes }).toEqual({ active: 2, busy: 1, free: 1 });
      } finally {
        await full.close();
        await roomy.close();
      }
    });

    it("needs a token", async () => {
      await expectError(call("/v1/metrics"), 401, "unauthorized");
    });
  });
});

describe("fleetCounts", () => {
  it("counts a node once across shards, busy when its work across shards fills its slots", () => {
    expect(
      fleetCounts([
        { agents: [{ nodeId: "a", slots: 2, busy: 1 }, { nodeId: "b", slots: 1, busy: 0 }] },
        { agents: [{ nodeId: "a", slots: 2, busy: 1 }, { nodeId: "c", slots: 4, busy: 4 }] },
      ]),
    ).toEqual({ activeNodes: 3, busyNodes: 2, freeNodes: 1 });
  });
});
