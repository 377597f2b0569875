import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ADMIN, call, callJson, clearQueue, expectNoContent, ISO_UTC, newAccount, newFunction, uploadBuild, onRowlessTasks } from "./helpers.js";
import { eventually, FakeAgent } from "./fake-agent.js";
import { buildsToKeep } from "../../worker/limits/artifact-eviction.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

/** One build through the dispatcher as an agent runs it: its artifact uploaded, then its end reported. */
async function build(agent: FakeAgent, token: string, fn: string, ok = true): Promise<string> {
  const { id } = await uploadBuild(token, fn);
  const assign = await agent.next("build.assign", 10_000);
  agent.send({ type: "build.started", buildId: id });
  const put = await call(assign.artifactPath, { token: agent.token, method: "PUT", body: `artifact of ${id}`, headers: { "content-length": String(12 + id.length) } });
  expect(put.status).toBe(204);
  agent.send(ok ? { type: "build.done", buildId: id, ok: true, artifactSize: 12 + id.length } : { type: "build.done", buildId: id, ok: false, reason: "does not compile" });
  await eventually(async () => (await callJson(`/v1/build/${id}`, 200, { token })).status === (ok ? "SUCCESS" : "FAILED"), 10_000);
  return id;
}

/** The build ids that still have objects in R2, by kind. */
async function stored(accountId: string, fn: string) {
  const keys = (await env.BUCKET.list({ prefix: `acct/${accountId}/fn/${fn}/builds/` })).objects.map((o) => o.key);
  const of = (file: string) => keys.filter((k) => k.endsWith(file)).map((k) => k.split("/")[5]!).sort();
  return { zips: of("source.zip"), artifacts: of("artifact.tar") };
}

describe("artifacts kept per function (artifactsKept)", () => {
  it("keeps the zips and artifacts of the last 5 successful builds; older ones leave R2, their records stay readable", async () => {
    const agent = await FakeAgent.connect("evict-1", { builds: 4 });
    const { token, accountId } = await newAccount();
    const fn = await newFunction(token);
    const ids: string[] = [];
    for (let i = 0; i < 7; i++) ids.push(await build(agent, token, fn));
    const kept = ids.slice(2).sort();
    await eventually(async () => JSON.stringify(await stored(accountId, fn)) === JSON.stringify({ zips: kept, artifacts: kept }), 10_000);
    for (const old of ids.slice(0, 2)) {
      const b = await callJson(`/v1/build/${old}`, 200, { token });
      expect(b).toMatchObject({ id: old, status: "SUCCESS", evictedAt: expect.stringMatching(ISO_UTC) });
      expect(b.timeline.map((t: { status: string }) => t.status)).toEqual(["PENDING", "BUILDING", "SUCCESS"]);
    }
    expect(await callJson(`/v1/build/${ids[6]}`, 200, { token })).toMatchObject({ status: "SUCCESS", evictedAt: null });
    // The console's build page says so too.
    const page = async (id: string) => (await call(`/console/builds/${id}`, { headers: { cookie: `gc_console=${token}`, accept: "text/html" } })).text();
    expect(await page(ids[0]!)).toContain("Its zip and artifact were deleted at");
    expect(await page(ids[6]!)).not.toContain("were deleted");
    // Tasks still run the newest build, whose artifact is kept.
    const { id: taskId } = await callJson(`/v1/task/${fn}`, 201, { token, json: {} });
    const run = await agent.next("task.assign", 10_000);
    expect(run).toMatchObject({ taskId, buildId: ids[6] });
    const artifact = await call(run.artifactPath, { token: agent.token });
    expect(new TextDecoder().decode(await artifact.arrayBuffer())).toBe(`artifact of ${ids[6]}`);
  });

  it("frees a failed build's zip, and a lowered limit applies from the function's next build", async () => {
    const agent = await FakeAgent.connect("evict-2", { builds: 4 });
    const { token, accountId } = await newAccount();
    const fn = await newFunction(token);
    const good = [await build(agent, token, fn), await build(agent, token, fn), await build(agent, token, fn)];
    const failed = await build(agent, token, fn, false);
    await eventually(async () => !(await stored(accountId, fn)).zips.includes(failed), 10_000);
    expect(await callJson(`/v1/build/${failed}`, 200, { token })).toMatchObject({ status: "FAILED", evictedAt: expect.stringMatching(ISO_UTC) });
    expect(await stored(accountId, fn)).toEqual({ zips: good.sort(), artifacts: good.sort() });

    await expectNoContent(call(`/v1/admin/accounts/${accountId}`, { token: ADMIN, method: "PATCH", json: { limits: { artifactsKept: 1 } } }));
    const newest = await build(agent, token, fn);
    await eventually(async () => JSON.stringify(await stored(accountId, fn)) === JSON.stringify({ zips: [newest], artifacts: [newest] }), 10_000);
  });

  it("leaves other functions' builds alone", async () => {
    const agent = await FakeAgent.connect("evict-3", { builds: 4 });
    const { token, accountId } = await newAccount();
    await expectNoContent(call(`/v1/admin/accounts/${accountId}`, { token: ADMIN, method: "PATCH", json: { limits: { artifactsKept: 1 } } }));
    const a = await newFunction(token);
    const b = await newFunction(token);
    const first = await build(agent, token, a);
    const other = await build(agent, token, b);
    const second = await build(agent, token, a);
    await eventually(async () => !(await stored(accountId, a)).zips.includes(first), 10_000);
    expect(await stored(accountId, a)).toEqual({ zips: [second], artifacts: [second] });
    expect(await stored(accountId, b)).toEqual({ zips: [other], artifacts: [other] });
  });
});

describe("which builds keep their artifacts", () => {
  const newestFirst = [
    { id: "b7", status: "SUCCESS" },
    { id: "b6", status: "FAILED" },
    { id: "b5", status: "SUCCESS" },
    { id: "b4", status: "SUCCESS" },
    { id: "b3", status: "SUCCESS" },
    { id: "b2", status: "FAILED" },
    { id: "b1", status: "SUCCESS" },
  ];

  it("keeps the newest successful ones up to the limit, never a failed one", () => {
    expect([...buildsToKeep(newestFirst, 2, new Set())].sort()).toEqual(["b5", "b7"]);
    expect([...buildsToKeep(newestFirst, 10, new Set())].sort()).toEqual(["b1", "b3", "b4", "b5", "b7"]);
  });

  it("keeps a protected build (a pinned or canary release) whatever its age, beside the newest ones", () => {
    expect([...buildsToKeep(newestFirst, 2, new Set(["b1"]))].sort()).toEqual(["b1", "b5", "b7"]);
  });
});
