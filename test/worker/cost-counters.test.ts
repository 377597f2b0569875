import { createExecutionContext, env } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import worker from "../../worker/index.js";
import { ADMIN, call, clearQueue, deployedFunction, newAccount } from "./helpers.js";

beforeEach(clearQueue);

/** A request to the Worker as bench/cost.ts runs it: with the binding COST_COUNTERS = "1". */
const counted = (path: string, init: RequestInit = {}) =>
  worker.fetch!(new Request(`https://api.test${path}`, init) as Request<unknown, IncomingRequestCfProperties>, { ...env, COST_COUNTERS: "1" }, createExecutionContext());
const admin = { authorization: `Bearer ${ADMIN}` };

describe("cost counters (bench/cost.ts)", () => {
  it("are off unless COST_COUNTERS is set: /__cost/ is then a path like any unknown one", async () => {
    expect((await call("/__cost/counts", { token: ADMIN })).status).toBe(404);
  });

  it("answer the operator only", async () => {
    expect((await counted("/__cost/counts")).status).toBe(401);
    expect((await counted("/__cost/counts", { headers: { authorization: "Bearer not-the-admin-token" } })).status).toBe(401);
    expect((await counted("/__cost/counts", { headers: admin })).status).toBe(200);
  });

  it("count a task creation's request, D1 statements and dispatcher call", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    expect((await counted("/__cost/reset", { method: "POST", headers: admin })).status).toBe(204);
    const res = await counted(`/v1/task/${fn}`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: "{}" });
    expect(res.status).toBe(201);
    const counts = (await (await counted("/__cost/counts", { headers: admin })).json()) as Record<string, number>;
    expect(counts).toMatchObject({ "http POST /v1/task/:": 1, "do dispatcher.enqueue": 1, "do rpc calls": 1 });
    const inserts = Object.entries(counts).filter(([k]) => k.startsWith('d1 sql: insert into "tasks"'));
    expect(inserts.map(([, n]) => n)).toEqual([1]);
    expect(counts["d1 statements"]).toBeGreaterThanOrEqual(1);
    expect(counts["d1 round trips"]).toBeGreaterThanOrEqual(1);
  });
});
