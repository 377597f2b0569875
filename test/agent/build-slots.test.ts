import path from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Runner } from "../../agent/runner/index.js";
import { BuildSlots } from "../../agent/work/build-slots.js";
import { ensureEnvironment } from "./helpers/environment.js";
import { buildFiles, call, removeTempDirs, tempDir } from "./helpers/functions.js";

const docker = new Docker();
const runners: Runner[] = [];

async function runner(maxContainers: number): Promise<Runner> {
  const r = await Runner.create({ stateDir: path.join(await tempDir("state-slots"), "state"), agentId: `test-build-slots-${runners.length}`, maxContainers });
  runners.push(r);
  return r;
}

beforeAll(async () => {
  await ensureEnvironment(["py"]);
});

afterAll(async () => {
  await Promise.all(runners.map((r) => r.shutdown()));
  await removeTempDirs();
});

describe("builds and the node's container cap", () => {
  it("counts a build as one of the node's containers: a full node removes an idle warm container to make room", async () => {
    const node = await runner(1);
    const built = await buildFiles("py", [{ name: "handler.py", data: "def handle(event, context):\n    return 'warm'\n" }]);
    const first = await node.invoke(call(built, "py", {}));
    expect(first.status).toBe(200);
    expect(node.containers()).toHaveLength(1);

    const release = await new BuildSlots(2, node).take();
    expect(node.containers()).toEqual([]);
    await expect(docker.getContainer(first.containerId).inspect()).rejects.toMatchObject({ statusCode: 404 });
    release();
    expect((await node.invoke(call(built, "py", {}))).status).toBe(200);
  });
});

describe("builds per node", () => {
  it("runs at most the node's maximum of builds at once; the next starts when one ends", async () => {
    const slots = new BuildSlots(1, await runner(4));
    const events: string[] = [];
    const first = await slots.take();
    const second = slots.take().then((release) => {
      events.push("second started");
      return release;
    });
    // Everything the second take could do without waiting for the first is done by now.
    await new Promise((r) => setImmediate(r));
    expect(slots.busy).toBe(1);
    events.push("first ended");
    first();
    (await second)();
    expect(events).toEqual(["first ended", "second started"]);
    expect(slots.busy).toBe(0);
  });
});
