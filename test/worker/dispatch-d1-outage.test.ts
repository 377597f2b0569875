import { env, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, callJson, clearQueue, deployedFunction, newAccount, onRowlessTasks } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";
import { shardStub } from "../../worker/dispatch/client.js";
import { openDb, type Db } from "../../worker/db/client.js";
import { closeFailureWindow, openFailureWindow } from "../../worker/db/d1-trouble.js";
import type { Bindings } from "../../worker/env.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

/**
 * A shard assigning a task while D1 fails (worker/db/d1-trouble.ts): the task's configuration
 * (variables, secrets) is read from D1 on its function's first assignment, through the shard's
 * `db`, which the test points at the same D1 with the failure control's binding.
 */
type WithDb = { db: Db };
let original: Db | undefined;

beforeEach(clearQueue);
afterEach(async () => {
  closeFailureWindow();
  if (original) await runInDurableObject(shardStub(env, 0), (o) => void ((o as unknown as WithDb).db = original!));
  original = undefined;
  await FakeAgent.closeAll();
});

describe("a task assigned while D1 fails", () => {
  it("waits in the queue, its attempt not counted, and goes to the agent once D1 answers", async () => {
    const agent = await FakeAgent.connect("d1-outage", { slots: 1 });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const shard = shardStub(env, 0);
    await shard.configChanged(fn); // nothing cached: the assignment reads D1
    await runInDurableObject(shard, (o) => {
      const s = o as unknown as WithDb;
      original = s.db;
      s.db = openDb({ ...(env as unknown as Bindings), D1_TEST_FAILURES: "1" });
      openFailureWindow(60_000, "refuse");
    });
    const { id } = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: {} });
    expect(await agent.none("task.assign")).toBe(true);
    const row = await runInDurableObject(shard, (_o, state) => state.storage.sql.exec<{ node: string | null; attempts: number }>("select node, attempts from work where id = ?", id).one());
    expect(row).toEqual({ node: null, attempts: 0 });

    await runInDurableObject(shard, () => closeFailureWindow());
    await runDurableObjectAlarm(shard);
    const assign = await agent.next("task.assign");
    expect(assign.taskId).toBe(id);
    agent.done(id, "ran after the outage");
    const res = await call(`/v1/task/${id}/result?wait=5`, { token });
    expect({ status: res.status, body: await res.text() }).toEqual({ status: 200, body: "ran after the outage" });
  });
});
