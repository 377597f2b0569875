import { describe, expect, it } from "vitest";
import { callJson, deployedFunction, finishTask, newAccount, newEndpoint, newTask, sql } from "./helpers.js";

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
    if (o.finished) await finishTask(id, { finishedAt: Math.max(o.issuedAt ?? now, now - DAY) });
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

    expect(await callJson(`/v1/endpoint/${ep}/metrics`, 200, { token })).toEqual({ todayTasks: 2, pendingTasks: 4, weekTasks: 5 });
    expect(await callJson(`/v1/endpoint/${otherEp}/metrics`, 200, { token })).toEqual({ todayTasks: 1, pendingTasks: 0, weekTasks: 1 });
  });
});
