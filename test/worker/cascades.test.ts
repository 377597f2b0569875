import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  call,
  callJson,
  deployedFunction,
  expectError,
  expectNoContent,
  finishTask,
  newAccount,
  newEndpoint,
  newFunction,
  newTag,
  newTask,
  newTrigger,
  uploadBuild,
  onRowlessTasks,
} from "./helpers.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

describe("DELETE /v1/function/<function_id> cascades", () => {
  it("removes the function's triggers, as first or as next function, its endpoints and its builds", async () => {
    const { token, accountId } = await newAccount();
    const doomed = await newFunction(token, { name: "doomed" });
    const a = await newFunction(token, { name: "a" });
    const b = await newFunction(token, { name: "b" });
    const asFirst = await newTrigger(token, { functionId: doomed, nextId: a });
    const asNext = await newTrigger(token, { functionId: a, nextId: doomed });
    const self = await newTrigger(token, { functionId: doomed, nextId: doomed });
    const unrelated = await newTrigger(token, { functionId: a, nextId: b });
    const ep = await newEndpoint(token, doomed);
    const keptEp = await newEndpoint(token, a);
    const build = (await uploadBuild(token, doomed)).id;
    const keptBuild = (await uploadBuild(token, a)).id;

    await expectNoContent(call(`/v1/function/${doomed}`, { token, method: "DELETE" }));

    for (const id of [asFirst, asNext, self]) await expectError(call(`/v1/trigger/${id}`, { token }), 404, "not_found");
    await expectError(call(`/v1/endpoint/${ep}`, { token }), 404, "not_found");
    await expectError(call(`/v1/build/${build}`, { token }), 404, "not_found");
    const idsOf = (x: { results: { id: string }[] }) => x.results.map((r) => r.id);
    expect(idsOf(await callJson("/v1/trigger/list", 200, { token }))).toEqual([unrelated]);
    expect(idsOf(await callJson("/v1/endpoint/list", 200, { token }))).toEqual([keptEp]);
    expect(idsOf(await callJson("/v1/build/list?limit=10", 200, { token }))).toEqual([keptBuild]);
    // The stored zips go too (after the response, so allow a moment).
    const prefix = `acct/${accountId}/fn/${doomed}/`;
    for (let i = 0; i < 20 && (await env.BUCKET.list({ prefix })).objects.length; i++) await new Promise((r) => setTimeout(r, 50));
    expect((await env.BUCKET.list({ prefix })).objects).toEqual([]);
    expect((await env.BUCKET.list({ prefix: `acct/${accountId}/fn/${a}/` })).objects).toHaveLength(1);
  });

  it("cancels pending tasks (status 410, finished set) and keeps every task readable", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const done = await newTask(token, fn);
    await finishTask(done, { contentType: "text/plain", body: "kept" });
    const pending = await newTask(token, fn);

    await expectNoContent(call(`/v1/function/${fn}`, { token, method: "DELETE" }));

    expect(await callJson(`/v1/task/${pending}`, 200, { token })).toMatchObject({ functionId: fn, status: 410, progress: 100, finished: expect.stringMatching(/^\d{10}$/) });
    await expectError(call(`/v1/task/${pending}/result`, { token }), 410, "task_cancelled");
    expect(await callJson(`/v1/task/${pending}/log`, 200, { token })).toEqual({ id: pending, finished: true, log: [] });
    expect(await callJson(`/v1/task/${done}`, 200, { token })).toMatchObject({ status: 200, progress: 100 });
    const res = await call(`/v1/task/${done}/result`, { token });
    expect([res.status, await res.text()]).toEqual([200, "kept"]);
    const listed = await callJson<{ id: string; status: number }[]>(`/v1/task/list?functionId=${fn}`, 200, { token });
    expect(listed.map((t) => [t.id, t.status])).toEqual([
      [pending, 410],
      [done, 200],
    ]);
  });

  it("wakes a result read that is waiting on a pending task", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const pending = await newTask(token, fn);
    const started = Date.now();
    const waiting = call(`/v1/task/${pending}/result?wait=5`, { token });
    await new Promise((r) => setTimeout(r, 200));
    await expectNoContent(call(`/v1/function/${fn}`, { token, method: "DELETE" }));
    await expectError(waiting, 410, "task_cancelled");
    expect(Date.now() - started).toBeLessThan(4000);
  });
});

describe("DELETE /v1/tag/<tag_id> cascades", () => {
  it("detaches the tag from functions, triggers and endpoints, keeping their other tags", async () => {
    const { token } = await newAccount();
    const doomed = await newTag(token, { name: "doomed" });
    const kept = await newTag(token, { name: "kept" });
    const fn = await newFunction(token, { tag: [doomed, kept] });
    const trigger = await newTrigger(token, { functionId: fn, nextId: fn, tag: [kept, doomed] });
    const ep = await newEndpoint(token, fn, { tag: [doomed] });

    await expectNoContent(call(`/v1/tag/${doomed}`, { token, method: "DELETE" }));

    const keptTag = { id: kept, name: "kept", color: "#808080" };
    expect((await callJson(`/v1/function/${fn}`, 200, { token })).tags).toEqual([keptTag]);
    expect((await callJson("/v1/function/list", 200, { token }))[0].tags).toEqual([keptTag]);
    expect((await callJson(`/v1/trigger/${trigger}`, 200, { token })).tags).toEqual([keptTag]);
    expect((await callJson("/v1/trigger/list", 200, { token })).results[0].tags).toEqual([keptTag]);
    expect((await callJson(`/v1/endpoint/${ep}`, 200, { token })).tags).toEqual([]);
    expect((await callJson("/v1/endpoint/list", 200, { token })).results[0].tags).toEqual([]);
    await expectError(call(`/v1/function/list?tag=${doomed}`, { token }), 404, "not_found");
    // The id is free of links: attaching it again is refused, as for any unknown tag.
    await expectError(call(`/v1/function/${fn}`, { token, method: "PATCH", json: { tag: [doomed] } }), 400, "validation_failed");
  });
});
