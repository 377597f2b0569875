import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Runner } from "../../agent/runner/index.js";
import { ensureEnvironment } from "./helpers/environment.js";
import { buildFiles, call, removeTempDirs, tempDir, type Built } from "./helpers/functions.js";

// Two builds of one function, as a release with a canary runs them side by side on one node: each
// answers with its own version, so an answer says which code served it.
const FUNCTION_ID = "fn-release";
let plain: Runner;
let pooled: Runner;
let v1: Built;
let v2: Built;

const version = (v: string) => [{ name: "handler.py", data: `def handle(event, context):\n    return "${v}"\n` }];
const run = (runner: Runner, built: Built) => runner.invoke(call(built, "py", {}, {}, FUNCTION_ID));

beforeAll(async () => {
  await ensureEnvironment(["py"]);
  const state = await tempDir("state-release");
  plain = await Runner.create({ stateDir: path.join(state, "plain"), agentId: "test-release" });
  pooled = await Runner.create({ stateDir: path.join(state, "pooled"), agentId: "test-release-pool", pool: { size: 1, max: 1, idleMs: 60_000, languages: ["py"] } });
  v1 = await buildFiles("py", version("v1"));
  v2 = await buildFiles("py", version("v2"));
  expect([v1.result.ok, v2.result.ok], [...v1.log, ...v2.log].join("\n")).toEqual([true, true]);
});

afterAll(async () => {
  await plain?.shutdown();
  await pooled?.shutdown();
  await removeTempDirs();
});

describe.each([
  ["a node without a pool", () => plain],
  ["a node with a pool", () => pooled],
])("warm containers of one function's two builds, on %s", (_name, runner) => {
  it("each serves only tasks of its own build, and a task of the other build never reuses it", async () => {
    const first1 = await run(runner(), v1);
    expect([first1.status, first1.body.toString()], first1.log.join("\n")).toEqual([200, "v1"]);
    // v1's container is idle and warm now: a task of v2 must get a container of its own.
    const first2 = await run(runner(), v2);
    expect([first2.status, first2.body.toString(), first2.container]).toEqual([200, "v2", "cold"]);
    expect(first2.containerId).not.toBe(first1.containerId);
    const again1 = await run(runner(), v1);
    expect([again1.body.toString(), again1.container, again1.containerId]).toEqual(["v1", "warm", first1.containerId]);
    const again2 = await run(runner(), v2);
    expect([again2.body.toString(), again2.container, again2.containerId]).toEqual(["v2", "warm", first2.containerId]);
    const byBuild = new Map(runner().containers().filter((c) => c.functionId === FUNCTION_ID).map((c) => [c.id, c.buildId]));
    expect(byBuild.get(first1.containerId)).toBe(v1.buildId);
    expect(byBuild.get(first2.containerId)).toBe(v2.buildId);
  });

  it("keeps builds apart under concurrent calls of both, as a canary sends them", async () => {
    const builds = Array.from({ length: 8 }, (_, i) => (i % 3 === 0 ? v2 : v1));
    const results = await Promise.all(builds.map((b) => run(runner(), b)));
    results.forEach((r, i) => expect(r.body.toString(), r.log.join("\n")).toBe(builds[i] === v1 ? "v1" : "v2"));
    // Containers still held are labelled with the build each served (one discarded since is not listed).
    const owner = new Map(runner().containers().map((c) => [c.id, c.buildId]));
    results.forEach((r, i) => expect(owner.get(r.containerId) ?? builds[i]!.buildId).toBe(builds[i]!.buildId));
    await runner().evictFunction(FUNCTION_ID);
  });
});
