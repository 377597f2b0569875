import { env, runInDurableObject } from "cloudflare:test";
import { shardStub } from "../../worker/dispatch/client.js";
import { describe, expect, it } from "vitest";
import { periodOf } from "../../worker/billing/plans.js";
import {
  ADMIN,
  call,
  callJson,
  deployedFunction,
  expectError,
  finishTask,
  grantEgress,
  grantPrivileged,
  markBuild,
  newAccount,
  newFunction,
  newTask,
  RECORD_ID,
  sql,
  UNIX_SECONDS,
  uploadBuild,
  recordsFlushed, flushedDb } from "./helpers.js";

async function deployed(body: Record<string, unknown> = {}) {
  const { token, accountId } = await newAccount();
  return { token, accountId, fn: await deployedFunction(token, body) };
}

const taskPost = (token: string, fn: string, o: { body?: BodyInit; headers?: Record<string, string>; query?: string } = {}) =>
  call(`/v1/task/${fn}${o.query ?? ""}`, { token, method: "POST", ...(o.body === undefined ? {} : { body: o.body }), headers: o.headers ?? {} });

/** The input a task hands its function, as stored with the task. */
async function inputOf(id: string) {
  await recordsFlushed();
  const row = await (await flushedDb()).prepare("select input from tasks where id = ?").bind(id).first<{ input: string }>();
  return JSON.parse(row!.input);
}

describe("POST /v1/task/<function_id>", () => {
  it("answers 201 with the task id", async () => {
    const { token, fn } = await deployed();
    const body = await callJson(`/v1/task/${fn}?name=world`, 201, { token, json: { greeting: "hi" } });
    expect(body).toEqual({ id: expect.stringMatching(RECORD_ID) });
  });

  it("takes any JSON value, with or without Content-Type, and no body at all", async () => {
    const { token, fn } = await deployed();
    for (const body of ['{"a":1}', "[1,2]", '"text"', "42", "null", "true"]) {
      expect((await taskPost(token, fn, { body, headers: { "content-type": "application/json" } })).status, body).toBe(201);
      expect((await taskPost(token, fn, { body })).status, body).toBe(201);
    }
    expect((await taskPost(token, fn)).status).toBe(201);
  });

  it("hands the query parameters, headers and body to the function, without the caller's token", async () => {
    const { token, fn } = await deployed();
    const { id } = await callJson(`/v1/task/${fn}?a=1&b=2&b=3`, 201, { token, json: { x: [1] }, headers: { "x-trace": "t1" } });
    const input = await inputOf(id);
    expect(input).toMatchObject({ method: "POST", query: { a: "1", b: ["2", "3"] }, body: '{"x":[1]}' });
    expect(input.headers["x-trace"]).toBe("t1");
    expect(input.headers.authorization).toBeUndefined();
  });

  it("refuses a body whose Content-Type says JSON but is not valid JSON or UTF-8 (400)", async () => {
    const { token, fn } = await deployed();
    for (const ct of ["application/json", "application/json; charset=utf-8", "application/vnd.api+json"])
      for (const body of ["{", "hello", "{'a':1}", "[1,]", "NaN"])
        await expectError(taskPost(token, fn, { body, headers: { "content-type": ct } }), 400, "invalid_json");
    await expectError(taskPost(token, fn, { body: new Uint8Array([0x22, 0xff, 0xfe, 0x22]), headers: { "content-type": "application/json" } }), 400, "invalid_json");
    expect(await callJson(`/v1/task/list?functionId=${fn}`, 200, { token })).toEqual([]);
  });

  // Third-party apps of the original service send files as octet-stream, CSV as text/csv, forms as
  // urlencoded: the function gets the exact bytes and the caller's Content-Type.
  it("hands a body of any other Content-Type, or none, to the function byte for byte", async () => {
    const { token, fn } = await deployed();
    const binary = new Uint8Array(256).map((_, i) => i);
    const cases: [BodyInit, Record<string, string>, { body: string; bodyEncoding?: string }][] = [
      [binary, { "content-type": "application/octet-stream" }, { body: btoa(String.fromCharCode(...binary)), bodyEncoding: "base64" }],
      ["a,b\n1,2\n", { "content-type": "text/csv" }, { body: "a,b\n1,2\n" }],
      ["a=1&b=%20", { "content-type": "application/x-www-form-urlencoded" }, { body: "a=1&b=%20" }],
      ["\ufeffwith a BOM", { "content-type": "text/plain" }, { body: "\ufeffwith a BOM" }],
      ["{not json", {}, { body: "{not json" }],
      [new Uint8Array([0xff, 0x00, 0x41]), {}, { body: btoa("\xff\x00A"), bodyEncoding: "base64" }],
    ];
    for (const [body, headers, expected] of cases) {
      const res = await taskPost(token, fn, { body, headers });
      expect(res.status).toBe(201);
      const { id } = (await res.json()) as { id: string };
      const input = await inputOf(id);
      expect({ body: input.body, bodyEncoding: input.bodyEncoding }).toEqual({ bodyEncoding: undefined, ...expected });
      if (headers["content-type"]) expect(input.headers["content-type"]).toBe(headers["content-type"]);
    }
  });

  it("answers 413 for a body over 10 MiB, declared or streamed", async () => {
    const { token, fn } = await deployed();
    const big = JSON.stringify("x".repeat(10 * 1024 * 1024));
    await expectError(taskPost(token, fn, { body: big, headers: { "content-type": "application/json" } }), 413, "payload_too_large");
    const chunk = new TextEncoder().encode(" ".repeat(1024 * 1024));
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(ctrl) {
        if (sent++ > 10) ctrl.close();
        else ctrl.enqueue(chunk.slice());
      },
    });
    await expectError(taskPost(token, fn, { body: stream }), 413, "payload_too_large");
  });

  it("answers 409 no_successful_build for a function without a SUCCESS build, and records no task", async () => {
    const { token, accountId } = await newAccount();
    const fn = await newFunction(token);
    await expectError(taskPost(token, fn), 409, "no_successful_build");
    const pending = await uploadBuild(token, fn);
    await expectError(taskPost(token, fn), 409, "no_successful_build");
    await markBuild(pending.id, "FAILED");
    await expectError(taskPost(token, fn), 409, "no_successful_build");
    // An input too large for the row is put in R2 before the insert; a refused task leaves nothing there.
    await expectError(taskPost(token, fn, { body: JSON.stringify("x".repeat(100 * 1024)) }), 409, "no_successful_build");
    expect(await callJson(`/v1/task/list?functionId=${fn}`, 200, { token })).toEqual([]);
    expect((await env.BUCKET.list({ prefix: `acct/${accountId}/tasks/` })).objects).toEqual([]);
    await markBuild((await uploadBuild(token, fn)).id, "SUCCESS");
    expect((await taskPost(token, fn)).status).toBe(201);
    expect(await callJson(`/v1/task/list?functionId=${fn}`, 200, { token })).toHaveLength(1);
  });

  it("copies the function's lang, capabilities, egress and newest SUCCESS build into the task, paused or not", async () => {
    const { token, accountId } = await newAccount();
    await grantPrivileged(accountId);
    await grantEgress(accountId);
    const fn = await newFunction(token, { lang: "JS" });
    await callJson(`/v1/function/${fn}/capabilities`, 204, { token, json: { timeout: 75, cpuCount: 0.5, memSize: 640, privileged: true } });
    await callJson(`/v1/function/${fn}/network`, 204, { token, method: "PUT", json: { egress: "internet" } });
    const builds: string[] = [];
    for (const status of ["SUCCESS", "SUCCESS", "FAILED"] as const) {
      builds.push((await uploadBuild(token, fn)).id);
      await markBuild(builds.at(-1)!, status);
    }
    await uploadBuild(token, fn); // newer still, but pending
    const copied = await (await flushedDb()).prepare("select lang, timeout, cpu_count, mem_size, privileged, egress from functions where id = ?").bind(fn).first();
    expect(copied).toEqual({ lang: "js", timeout: 75, cpu_count: 0.5, mem_size: 640, privileged: 1, egress: "internet" });
    for (const paused of [false, true]) {
      if (paused) await callJson(`/v1/function/${fn}/togglePause`, 204, { token, method: "POST" });
      const id = await newTask(token, fn, { paused });
      expect(await (await flushedDb()).prepare("select * from tasks where id = ?").bind(id).first(), `paused: ${paused}`).toEqual({
        ...copied,
        id,
        account_id: accountId,
        function_id: fn,
        build_id: builds[1],
        endpoint_id: null,
        trigger_id: null,
        parent_task_id: null,
        chain_id: null,
        hop: 0,
        issued_at: expect.closeTo(Date.now(), -4),
        assigned_at: null,
        finished_at: null,
        progress: 0,
        status: 0,
        node: null,
        network_latency: 0,
        input: expect.stringContaining(`"body":"{\\"paused\\":${paused}}"`),
        input_key: null,
        result_status: null,
        result_headers: null,
        result_body: null,
        result_key: null,
        log: null,
        log_key: null,
        duration_ms: null,
        purged_at: null,
        scheduled_id: null,
        runtime: null,
        attempts: 0,
      });
    }
  });

  it("answers 402 quota_exhausted once the plan's invocations are used up, and records no task", async () => {
    const { token, accountId } = await newAccount();
    await callJson(`/v1/admin/accounts/${accountId}`, 204, { token: ADMIN, method: "PATCH", json: { plan: "TINY" } });
    const fn = await deployedFunction(token);
    const meter = (taskId: string, period = periodOf(Date.now())) =>
      sql("insert into usage (task_id, account_id, function_id, period, finished_at, duration_ms, mem_mib) values (?, ?, ?, ?, 0, 10, 256)", `${taskId}#1`, accountId, fn, period);
    await meter("lastmonth1", "2000-01");
    await meter("lastmonth2", "2000-01");
    // Each finishes before the next is issued (an unfinished task reserves its invocation too), and
    // the update that finishes its row meters it.
    for (let i = 0; i < 2; i++) await finishTask(await newTask(token, fn));
    const err = await expectError(taskPost(token, fn), 402, "quota_exhausted");
    expect(err.message).toContain("TINY (2 invocations)");
    expect(await callJson(`/v1/task/list?functionId=${fn}`, 200, { token })).toHaveLength(2);
    // A plan no longer configured counts as the first configured one (DEVELOPER, 100000 invocations).
    await sql("update accounts set plan = 'RETIRED' where id = ?", accountId);
    expect((await taskPost(token, fn)).status).toBe(201);
  });

  it("answers 404 for an unknown function or another account's, and records no task", async () => {
    const { token } = await newAccount();
    await expectError(taskPost(token, "nosuchfunction"), 404, "not_found");
    const owner = await deployed();
    await expectError(taskPost(token, owner.fn), 404, "not_found");
    expect(await callJson("/v1/task/list", 200, { token })).toEqual([]);
    expect(await callJson("/v1/task/list", 200, { token: owner.token })).toEqual([]);
  });
});

describe("GET /v1/task/<task_id>", () => {
  it("answers a pending task with the function's capabilities at issue time", async () => {
    const { token, accountId, fn } = await deployed();
    await grantPrivileged(accountId);
    await callJson(`/v1/function/${fn}/capabilities`, 204, { token, json: { timeout: 60, cpuCount: 2, memSize: 512, privileged: true } });
    const id = await newTask(token, fn);
    await call(`/v1/function/${fn}/capabilities`, { token, json: { timeout: 90 } });
    const task = await callJson(`/v1/task/${id}`, 200, { token });
    expect(task).toEqual({
      id,
      functionId: fn,
      buildId: expect.stringMatching(RECORD_ID),
      issued: expect.stringMatching(UNIX_SECONDS),
      assigned: null,
      finished: null,
      progress: 0,
      status: 0,
      node: null,
      timeout: 60,
      capabilities: { cpuCount: 2, memSize: 512, networkLatency: 0, privileged: true },
      endpointId: null,
      triggerId: null,
      parentTaskId: null,
      scheduledId: null,
      runtime: null,
      responseHeaders: null,
      attempts: 0,
    });
    expect(Math.abs(Number(task.issued) - Date.now() / 1000)).toBeLessThan(5);
  });

  it("answers a finished task with its times as Unix seconds and the node that ran it", async () => {
    const { token, fn } = await deployed();
    const id = await newTask(token, fn);
    await finishTask(id, { finishedAt: Date.UTC(2026, 10, 21, 5, 14) });
    expect(await callJson(`/v1/task/${id}`, 200, { token })).toMatchObject({
      assigned: String(Date.UTC(2026, 10, 21, 5, 14) / 1000 - 1),
      finished: "1795238040",
      progress: 100,
      status: 200,
      node: "node-1",
    });
  });

  it("answers 404 for an unknown id", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/task/nosuchtask", { token }), 404, "not_found");
  });
});

describe("GET /v1/task/list", () => {
  it("answers 503 storage_unavailable with Retry-After, not 500, while a shard it needs is overloaded", async () => {
    const { token } = await deployed();
    const stub = shardStub(env, 0);
    // The shard's page fails inside it, as an overloaded object's call does (the message crosses the RPC).
    await runInDurableObject(stub, (o) => {
      (o as unknown as { reads: { ofAccount: () => never } }).reads.ofAccount = () => {
        throw new Error("Durable Object is overloaded. Too many requests queued.");
      };
    });
    try {
      const res = await call("/v1/task/list", { token });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe("5");
      expect((await res.json<{ error: { code: string } }>()).error.code).toBe("storage_unavailable");
    } finally {
      await runInDurableObject(stub, (o) => {
        delete (o as unknown as { reads: { ofAccount?: unknown } }).reads.ofAccount;
      });
    }
    expect(await callJson("/v1/task/list", 200, { token })).toEqual([]);
  });

  it("answers the caller's tasks as [{id, issued, progress, status}], newest first", async () => {
    const { token, fn } = await deployed();
    expect(await callJson("/v1/task/list", 200, { token })).toEqual([]);
    const a = await newTask(token, fn);
    const b = await newTask(token, fn);
    await finishTask(a);
    expect(await callJson("/v1/task/list", 200, { token })).toEqual([
      { id: b, issued: expect.stringMatching(UNIX_SECONDS), progress: 0, status: 0 },
      { id: a, issued: expect.stringMatching(UNIX_SECONDS), progress: 100, status: 200 },
    ]);
  });

  it("filters by functionId and pages with limit and before", async () => {
    const { token, fn } = await deployed();
    const other = await deployedFunction(token, { name: "other" });
    const ids = [await newTask(token, fn), await newTask(token, fn), await newTask(token, fn)];
    const otherTask = await newTask(token, other);
    const idsOf = (xs: { id: string }[]) => xs.map((x) => x.id);
    expect(idsOf(await callJson(`/v1/task/list?functionId=${fn}`, 200, { token }))).toEqual([...ids].reverse());
    expect(idsOf(await callJson(`/v1/task/list?functionId=${other}`, 200, { token }))).toEqual([otherTask]);
    expect(idsOf(await callJson("/v1/task/list?limit=2", 200, { token }))).toEqual([otherTask, ids[2]]);
    expect(idsOf(await callJson(`/v1/task/list?limit=2&before=${ids[2]}`, 200, { token }))).toEqual([ids[1], ids[0]]);
    expect(idsOf(await callJson(`/v1/task/list?before=${ids[0]}`, 200, { token }))).toEqual([]);
  });

  it("refuses limit 0 and 1001, malformed ids and unknown parameters; an unknown function answers 404", async () => {
    const { token } = await newAccount();
    await callJson("/v1/task/list?limit=1000", 200, { token });
    for (const q of ["limit=0", "limit=1001", "functionId=NOT-AN-ID", "before=%20", "page=2"])
      await expectError(call(`/v1/task/list?${q}`, { token }), 400, "validation_failed");
    await expectError(call("/v1/task/list?functionId=nosuchfunction", { token }), 404, "not_found");
  });
});

describe("GET /v1/task/<task_id>/result", () => {
  it("answers 202 {status: 0, progress} before the task finishes", async () => {
    const { token, fn } = await deployed();
    const id = await newTask(token, fn);
    expect(await callJson(`/v1/task/${id}/result`, 202, { token })).toEqual({ status: 0, progress: 0 });
    await sql("update tasks set progress = 40, assigned_at = ? where id = ?", Date.now(), id);
    expect(await callJson(`/v1/task/${id}/result`, 202, { token })).toEqual({ status: 0, progress: 40 });
  });

  it("replays the function's status, Content-Type and body once finished", async () => {
    const { token, fn } = await deployed();
    const text = await newTask(token, fn);
    await finishTask(text, { status: 201, contentType: "text/plain; charset=utf-8", body: "hello world" });
    const res = await call(`/v1/task/${text}/result`, { token });
    expect([res.status, res.headers.get("content-type"), await res.text()]).toEqual([201, "text/plain; charset=utf-8", "hello world"]);

    const json = await newTask(token, fn);
    await finishTask(json, { status: 418, contentType: "application/json", body: '{"teapot":true}' });
    const res2 = await call(`/v1/task/${json}/result`, { token });
    expect([res2.status, res2.headers.get("content-type"), await res2.json()]).toEqual([418, "application/json", { teapot: true }]);
  });

  it("waits with ?wait=S for an unfinished task, then still answers 202", async () => {
    const { token, fn } = await deployed();
    const id = await newTask(token, fn);
    const started = Date.now();
    expect(await callJson(`/v1/task/${id}/result?wait=1`, 202, { token })).toEqual({ status: 0, progress: 0 });
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });

  it("answers at once, without waiting, for a task that has finished", async () => {
    const { token, fn } = await deployed();
    const id = await newTask(token, fn);
    await finishTask(id, { contentType: "text/plain", body: "done" });
    const started = Date.now();
    const res = await call(`/v1/task/${id}/result?wait=10`, { token });
    expect([res.status, await res.text()]).toEqual([200, "done"]);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  it("refuses wait above 30 or not an integer (400)", async () => {
    const { token, fn } = await deployed();
    const id = await newTask(token, fn);
    for (const q of ["wait=31", "wait=-1", "wait=1.5", "wait=soon", "timeout=3"])
      await expectError(call(`/v1/task/${id}/result?${q}`, { token }), 400, "validation_failed");
  });

  it("answers 404 for an unknown id", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/task/nosuchtask/result", { token }), 404, "not_found");
  });
});

describe("GET /v1/task/<task_id>/log", () => {
  it("answers {id, finished, log}: empty while pending, the function's lines once finished", async () => {
    const { token, fn } = await deployed();
    const id = await newTask(token, fn);
    expect(await callJson(`/v1/task/${id}/log`, 200, { token })).toEqual({ id, finished: false, log: [] });
    await finishTask(id, { log: ["starting", "stderr: warning", "done"] });
    expect(await callJson(`/v1/task/${id}/log`, 200, { token })).toEqual({ id, finished: true, log: ["starting", "stderr: warning", "done"] });
  });

  it("answers 404 for an unknown id", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/task/nosuchtask/log", { token }), 404, "not_found");
  });
});
