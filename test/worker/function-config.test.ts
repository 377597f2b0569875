import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, callJson, clearQueue, deployedFunction, expectError, expectNoContent, newAccount, newEndpoint, newFunction, flushedDb, onRowlessTasks } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";
import { shardStub } from "../../worker/dispatch/client.js";
import { FRAME_BUDGET_BYTES } from "../../shared/protocol/messages.js";
import { MAX_CONFIG_FRAME_BYTES, MAX_SECRET_BYTES } from "../../shared/schemas/function-config.js";
import { withConfig } from "../../worker/function-config/task-configs.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const putEnv = (token: string, fn: string, json: unknown) => call(`/v1/function/${fn}/env`, { method: "PUT", token, json });
const putSecret = (token: string, fn: string, name: string, value: unknown) =>
  call(`/v1/function/${fn}/secrets/${name}`, { method: "PUT", token, json: { value } });

describe("GET /v1/function/<id>/env", () => {
  it("answers {} for a function without variables", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    expect(await callJson(`/v1/function/${fn}/env`, 200, { token })).toEqual({});
  });

  it("answers 404 for another account's function, as for an unknown one", async () => {
    const owner = await newAccount("owner");
    const other = await newAccount("other");
    const fn = await newFunction(owner.token);
    await expectNoContent(putEnv(owner.token, fn, { A: "1" }));
    await expectError(call(`/v1/function/${fn}/env`, { token: other.token }), 404, "not_found");
    await expectError(call(`/v1/function/nosuchfunction/env`, { token: owner.token }), 404, "not_found");
  });
});

describe("PUT /v1/function/<id>/env", () => {
  it("replaces every variable", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    await expectNoContent(putEnv(token, fn, { API_URL: "https://example.test", _x9: "", MULTI: "line\none ✓" }));
    expect(await callJson(`/v1/function/${fn}/env`, 200, { token })).toEqual({ API_URL: "https://example.test", _x9: "", MULTI: "line\none ✓" });
    await expectNoContent(putEnv(token, fn, { ONLY: "this" }));
    expect(await callJson(`/v1/function/${fn}/env`, 200, { token })).toEqual({ ONLY: "this" });
    await expectNoContent(putEnv(token, fn, {}));
    expect(await callJson(`/v1/function/${fn}/env`, 200, { token })).toEqual({});
  });

  const invalid: [string, unknown][] = [
    ["a name starting with a digit", { "1A": "x" }],
    ["a name with a dash", { "A-B": "x" }],
    ["an empty name", { "": "x" }],
    ["a name of 129 characters", { ["A".repeat(129)]: "x" }],
    ["the reserved prefix GC_", { GC_STORAGE: "x" }],
    ["the reserved prefix GCFAAS_", { GCFAAS_FUNCTION_ID: "x" }],
    ["a reserved prefix in lower case", { gcfaas_socket: "x" }],
    ["__proto__", JSON.parse('{"__proto__": "x"}')],
    ["a value with NUL", { A: "a\u0000b" }],
    ["a number value", { A: 1 }],
    ["a null value", { A: null }],
    ["an array body", ["A"]],
    ["a string body", "A=1"],
    ["65 variables", Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`V${i}`, "x"]))],
    ["more than 32 KiB of names and values", { A: "x".repeat(32 * 1024) }],
  ];
  for (const [what, body] of invalid) {
    it(`refuses ${what} with 400 and keeps the variables`, async () => {
      const { token } = await newAccount();
      const fn = await newFunction(token);
      await expectNoContent(putEnv(token, fn, { KEEP: "me" }));
      await expectError(putEnv(token, fn, body), 400, "validation_failed");
      expect(await callJson(`/v1/function/${fn}/env`, 200, { token })).toEqual({ KEEP: "me" });
    });
  }

  it("takes 64 variables and 128-character names", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    const vars = Object.fromEntries(Array.from({ length: 63 }, (_, i) => [`V${i}`, "x"]));
    vars["N".repeat(128)] = "y";
    await expectNoContent(putEnv(token, fn, vars));
    expect(Object.keys(await callJson(`/v1/function/${fn}/env`, 200, { token }))).toHaveLength(64);
  });

  it("refuses a name one of the function's secrets has: 409 name_taken", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    await expectNoContent(putSecret(token, fn, "TOKEN", "s3cret"));
    const err = await expectError(putEnv(token, fn, { A: "1", TOKEN: "x" }), 409, "name_taken");
    expect(err.message).toContain("TOKEN");
    expect(await callJson(`/v1/function/${fn}/env`, 200, { token })).toEqual({});
  });

  it("needs a JSON body", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    await expectError(call(`/v1/function/${fn}/env`, { method: "PUT", token, body: "{", headers: { "content-type": "application/json" } }), 400, "invalid_json");
    await expectError(call(`/v1/function/${fn}/env`, { method: "PUT", token, body: "{}", headers: { "content-type": "text/plain" } }), 415, "unsupported_media_type");
  });
});

describe("PUT /v1/function/<id>/secrets/<NAME>", () => {
  it("creates and replaces a secret, listed by name only", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    await expectNoContent(putSecret(token, fn, "DB_PASSWORD", "hunter2-first"));
    await expectNoContent(putSecret(token, fn, "DB_PASSWORD", "hunter2-second"));
    const list = await callJson<{ name: string; updatedAt: string }[]>(`/v1/function/${fn}/secrets`, 200, { token });
    expect(list).toEqual([{ name: "DB_PASSWORD", updatedAt: expect.stringMatching(/Z$/) }]);
    expect(JSON.stringify(list)).not.toContain("hunter2");
    // A secret is no variable: the env read does not show it either.
    expect(await callJson(`/v1/function/${fn}/env`, 200, { token })).toEqual({});
  });

  const invalid: [string, string, unknown][] = [
    ["a bad name", "1BAD", { value: "x" }],
    ["a reserved name", "GCFAAS_X", { value: "x" }],
    ["a value over 16 KiB", "BIG", { value: "x".repeat(MAX_SECRET_BYTES + 1) }],
    ["a value with NUL", "NUL", { value: "a\u0000" }],
    ["a value that is not a string", "NUM", { value: 5 }],
    ["no value", "NONE", {}],
    ["an unknown field", "EXTRA", { value: "x", note: "y" }],
  ];
  for (const [what, name, body] of invalid) {
    it(`refuses ${what} with 400`, async () => {
      const { token } = await newAccount();
      const fn = await newFunction(token);
      await expectError(call(`/v1/function/${fn}/secrets/${name}`, { method: "PUT", token, json: body }), 400, "validation_failed");
      expect(await callJson(`/v1/function/${fn}/secrets`, 200, { token })).toEqual([]);
    });
  }

  it("refuses a name one of the function's variables has: 409 name_taken", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    await expectNoContent(putEnv(token, fn, { REGION: "eu" }));
    await expectError(putSecret(token, fn, "REGION", "x"), 409, "name_taken");
    expect(await callJson(`/v1/function/${fn}/env`, 200, { token })).toEqual({ REGION: "eu" });
  });

  it("holds at most 32 secrets a function, and replacing one of them still works", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    for (let i = 0; i < 32; i++) await expectNoContent(putSecret(token, fn, `S${i}`, "v"));
    await expectError(putSecret(token, fn, "S32", "v"), 400, "validation_failed");
    await expectNoContent(putSecret(token, fn, "S5", "replaced"));
    expect(await callJson(`/v1/function/${fn}/secrets`, 200, { token })).toHaveLength(32);
  });

  it("keeps variables and secrets together within the assignment frame's share", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    const big = "x".repeat(MAX_SECRET_BYTES);
    let stored = 0;
    for (let i = 0; stored + MAX_SECRET_BYTES < MAX_CONFIG_FRAME_BYTES - 64; i++, stored += MAX_SECRET_BYTES + 10) await expectNoContent(putSecret(token, fn, `BIG${i}`, big));
    const err = await expectError(putSecret(token, fn, "ONE_MORE", big), 400, "validation_failed");
    expect(err.message).toContain(String(MAX_CONFIG_FRAME_BYTES));
    // Control characters take six bytes each as JSON: the frame's share is counted that way.
    await expectError(putEnv(token, fn, { CTRL: "\u0001".repeat(8000) }), 400, "validation_failed");
  });

  it("answers 404 for another account's function", async () => {
    const owner = await newAccount("owner");
    const other = await newAccount("other");
    const fn = await newFunction(owner.token);
    await expectError(putSecret(other.token, fn, "A", "x"), 404, "not_found");
    await expectError(call(`/v1/function/${fn}/secrets`, { token: other.token }), 404, "not_found");
    expect(await callJson(`/v1/function/${fn}/secrets`, 200, { token: owner.token })).toEqual([]);
  });
});

describe("DELETE /v1/function/<id>/secrets/<NAME>", () => {
  it("deletes a secret; 404 when absent, when a variable, or another account's", async () => {
    const owner = await newAccount("owner");
    const other = await newAccount("other");
    const fn = await newFunction(owner.token);
    await expectNoContent(putSecret(owner.token, fn, "A", "x"));
    await expectNoContent(putEnv(owner.token, fn, { B: "y" }));
    await expectError(call(`/v1/function/${fn}/secrets/A`, { method: "DELETE", token: other.token }), 404, "not_found");
    await expectNoContent(call(`/v1/function/${fn}/secrets/A`, { method: "DELETE", token: owner.token }));
    await expectError(call(`/v1/function/${fn}/secrets/A`, { method: "DELETE", token: owner.token }), 404, "not_found");
    await expectError(call(`/v1/function/${fn}/secrets/B`, { method: "DELETE", token: owner.token }), 404, "not_found");
    expect(await callJson(`/v1/function/${fn}/env`, 200, { token: owner.token })).toEqual({ B: "y" });
  });
});

describe("secrets at rest", () => {
  const SECRET = "sk_live_do-not-leak-0123456789";

  it("are sealed in D1: the row holds neither the value nor its base64, and is bound to its function and name", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    const fn2 = await newFunction(token, { name: "other" });
    await expectNoContent(putSecret(token, fn, "KEY", SECRET));
    await expectNoContent(putSecret(token, fn2, "KEY", "placeholder"));
    const rows = await (await flushedDb()).prepare("select * from function_config").all<Record<string, unknown>>();
    const dump = JSON.stringify(rows.results);
    expect(dump).not.toContain(SECRET);
    expect(dump).not.toContain(btoa(SECRET).slice(0, 16));
    // A ciphertext copied onto another function's row does not open there: its task fails rather than run with it.
    const sealed = rows.results.find((r) => r.function_id === fn)!.value as string;
    await (await flushedDb()).prepare("update function_config set value = ? where function_id = ?").bind(sealed, fn2).run();
    const { taskConfigOf } = await import("../../worker/function-config/task-configs.js");
    await expect(taskConfigOf((await import("../../worker/db/client.js")).openDb(env), env.SECRETS_KEY, fn2)).rejects.toThrow();
    expect((await taskConfigOf((await import("../../worker/db/client.js")).openDb(env), env.SECRETS_KEY, fn)).secrets).toEqual({ KEY: SECRET });
  });

  it("go with the function when it is deleted", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    await expectNoContent(putSecret(token, fn, "KEY", SECRET));
    await expectNoContent(putEnv(token, fn, { A: "1" }));
    await expectNoContent(call(`/v1/function/${fn}`, { method: "DELETE", token }));
    const left = await (await flushedDb()).prepare("select count(*) as n from function_config where function_id = ?").bind(fn).first<{ n: number }>();
    expect(left?.n).toBe(0);
  });
});

describe("configuration in task assignments", () => {
  const SECRET = "sk_live_assigned-only-in-memory";

  it("reaches the agent with each task, a change from the next task on, and never the dispatcher's storage", async () => {
    const agent = await FakeAgent.connect("config-1", { slots: 1 });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await expectNoContent(putEnv(token, fn, { MODE: "one" }));
    await expectNoContent(putSecret(token, fn, "API_KEY", SECRET));
    const first = await runOne(agent, token, fn);
    expect(first.config).toEqual({ env: { MODE: "one" }, secrets: { API_KEY: SECRET } });

    await expectNoContent(putEnv(token, fn, { MODE: "two" }));
    await expectNoContent(call(`/v1/function/${fn}/secrets/API_KEY`, { method: "DELETE", token }));
    expect((await runOne(agent, token, fn)).config).toEqual({ env: { MODE: "two" }, secrets: {} });

    await expectNoContent(putSecret(token, fn, "API_KEY", SECRET));
    // A task queued while no agent is free waits in the dispatcher's storage: without its secrets.
    const busy = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: {} });
    const held = await agent.next("task.assign");
    expect(held.taskId).toBe(busy.id);
    const waiting = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: {} });
    const stored = await runInDurableObject(shardStub(env, 0), (_o, state) => {
      const out: unknown[] = [];
      for (const t of state.storage.sql.exec<{ name: string }>("select name from sqlite_master where type = 'table'")) {
        if (t.name.startsWith("_cf") || t.name.startsWith("sqlite")) continue;
        out.push(...state.storage.sql.exec(`select * from "${t.name}"`).toArray());
      }
      return JSON.stringify(out);
    });
    expect(stored).toContain(waiting.id);
    expect(stored).not.toContain(SECRET);
    agent.done(held.taskId, "ok");
    const next = await agent.next("task.assign");
    expect(next.taskId).toBe(waiting.id);
    expect(next.config?.secrets).toEqual({ API_KEY: SECRET });
  });

  it("goes to no other function: a function without configuration gets none", async () => {
    const agent = await FakeAgent.connect("config-2", { slots: 1 });
    const { token } = await newAccount();
    const other = await newAccount("other");
    const fn = await deployedFunction(token);
    const plain = await deployedFunction(other.token, { name: "plain" });
    await expectNoContent(putSecret(token, fn, "API_KEY", SECRET));
    expect((await runOne(agent, token, fn)).config?.secrets).toEqual({ API_KEY: SECRET });
    const assign = await runOne(agent, other.token, plain);
    expect(assign.config).toBeUndefined();
    expect(JSON.stringify(assign)).not.toContain(SECRET);
  });

  it("goes with tasks from public endpoints and schedules alike", async () => {
    const agent = await FakeAgent.connect("config-5", { slots: 1 });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await expectNoContent(putEnv(token, fn, { MODE: "public" }));
    await expectNoContent(putSecret(token, fn, "API_KEY", SECRET));
    const ep = await newEndpoint(token, fn);
    const viaGc = await callJson<{ id: string }>(`/gc/${ep}`, 201, { method: "POST" });
    const first = await agent.next("task.assign");
    expect([first.taskId, first.config]).toEqual([viaGc.id, { env: { MODE: "public" }, secrets: { API_KEY: SECRET } }]);
    agent.done(first.taskId, "ok");
    const { id: schedule } = await callJson<{ id: string }>("/v1/scheduled", 201, { token, json: { functionId: fn, cron: "0 0 1 1 *", timezone: "UTC" } });
    const tried = await callJson<{ id: string }>(`/v1/scheduled/${schedule}/try`, 201, { token, method: "POST" });
    const second = await agent.next("task.assign");
    expect([second.taskId, second.config?.secrets]).toEqual([tried.id, { API_KEY: SECRET }]);
  });

  it("keeps the frame within the protocol's budget with the largest configuration and a large inline input", async () => {
    const agent = await FakeAgent.connect("config-3", { slots: 1 });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const big = "é".repeat(MAX_SECRET_BYTES / 2);
    let taken = 0;
    for (let i = 0; taken + MAX_SECRET_BYTES + 64 <= MAX_CONFIG_FRAME_BYTES; i++, taken += MAX_SECRET_BYTES + 20) await expectNoContent(putSecret(token, fn, `S${i}`, big));
    // Escaped twice (as JSON text in the input's JSON), just under the 4 KiB that travels inline.
    const input = { text: "\u0001".repeat(500) };
    const { id } = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: input });
    const assign = await agent.next("task.assign");
    expect(new TextEncoder().encode(JSON.stringify(assign)).byteLength).toBeLessThanOrEqual(FRAME_BUDGET_BYTES);
    expect(assign.taskId).toBe(id);
    expect(Object.keys(assign.config!.secrets).length).toBeGreaterThan(5);
    expect(assign.input).not.toBeNull();
  });
});

describe("a task whose configuration cannot go with it", () => {
  it("fails with config_unavailable instead of running without its secrets", async () => {
    const agent = await FakeAgent.connect("config-4", { slots: 1 });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await expectNoContent(putSecret(token, fn, "API_KEY", "sealed-then-broken"));
    // A value that does not open under SECRETS_KEY (a rotated key, a tampered row).
    await (await flushedDb()).prepare("update function_config set value = 'v1.AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA' where function_id = ?").bind(fn).run();
    await shardStub(env, 0).configChanged(fn);
    const { id } = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: {} });
    const res = await call(`/v1/task/${id}/result?wait=10`, { token });
    expect(res.status).toBe(500);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("config_unavailable");
    expect(await agent.none("task.assign")).toBe(true);
  });

  it("fails on a node whose agent predates configuration, rather than run without it there", async () => {
    const agent = await FakeAgent.connect("config-old", { slots: 1, beforeConfigs: true });
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const plain = await deployedFunction(token, { name: "plain" });
    await expectNoContent(putSecret(token, fn, "API_KEY", "needs-a-new-agent"));
    const { id } = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: {} });
    const res = await call(`/v1/task/${id}/result?wait=10`, { token });
    expect(res.status).toBe(500);
    expect(((await res.json()) as { error: { message: string } }).error.message).toContain("too old");
    expect(await agent.none("task.assign")).toBe(true);
    // A function without configuration runs there as before.
    expect((await runOne(agent, token, plain)).config).toBeUndefined();
  });

  it("sends the input by URL when input, storage and configuration together would pass the frame budget", () => {
    const frame = JSON.stringify({ type: "task.assign", taskId: "t1", input: { body: "x".repeat(120 * 1024) }, inputPath: "/v1/agent/tasks/t1/input" });
    const config = { env: {}, secrets: { BIG: "y".repeat(150 * 1024) } };
    const out = withConfig(frame, config)!;
    expect(new TextEncoder().encode(out).byteLength).toBeLessThanOrEqual(FRAME_BUDGET_BYTES);
    expect(JSON.parse(out)).toMatchObject({ input: null, inputPath: "/v1/agent/tasks/t1/input", config });
    expect(withConfig(frame, { env: {}, secrets: { HUGE: "z".repeat(FRAME_BUDGET_BYTES) } })).toBeUndefined();
    expect(withConfig(frame, { env: {}, secrets: {} })).toBe(frame);
  });
});

async function runOne(agent: FakeAgent, token: string, fn: string) {
  const { id } = await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: {} });
  const assign = await agent.next("task.assign");
  expect(assign.taskId).toBe(id);
  agent.done(id, "ok");
  await agent.next("ack");
  await call(`/v1/task/${id}/result?wait=5`, { token });
  return assign;
}
