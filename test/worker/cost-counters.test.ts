import { createExecutionContext, env } from "cloudflare:test";
import { beforeEach, describe, expect, it } from "vitest";
import worker from "../../worker/index.js";
import { ADMIN, call, clearQueue, deployedFunction, newAccount, holdRecords } from "./helpers.js";

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

  it("count a task creation's request and dispatcher call, and the shard's later batch of D1 rows", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await holdRecords(true);
    expect((await counted("/__cost/reset", { method: "POST", headers: admin })).status).toBe(204);
    const res = await counted(`/v1/task/${fn}`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: "{}" });
    expect(res.status).toBe(201);
    const inserts = (counts: Record<string, number>) => Object.entries(counts).filter(([k]) => /^d1 sql: insert into "?tasks"?/.test(k));
    const created = (await (await counted("/__cost/counts", { headers: admin })).json()) as Record<string, number>;
    expect(created).toMatchObject({ "http POST /v1/task/:": 1, "do dispatcher.createTask": 1, "do rpc calls": 1 });
    // Created in the shard: no row is written to D1 on the request's path.
    expect(inserts(created)).toEqual([]);
    await holdRecords(false);
    const flushed = (await (await counted("/__cost/counts", { headers: admin })).json()) as Record<string, number>;
    expect(inserts(flushed).map(([, n]) => n)).toEqual([1]);
  });
});
