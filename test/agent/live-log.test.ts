import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Runner } from "../../agent/runner/index.js";
import { LiveLog } from "../../agent/work/live-log.js";
import { LIVE_LOG_FRAME_BYTES, type AgentMessage } from "../../shared/protocol/messages.js";
import { ensureEnvironment } from "./helpers/environment.js";
import { buildFiles, call, removeTempDirs, tempDir, type Built } from "./helpers/functions.js";

type TaskLog = Extract<AgentMessage, { type: "task.log" }>;

/** A call's log keeps this many lines here (the cut note included), so the cut is quick to reach. */
const MAX_LINES = 50;
const PRINTED = 80;
const SECRET = "s3cr3t-value";

let runner: Runner;
let printer: Built;

beforeAll(async () => {
  await ensureEnvironment(["py"]);
  runner = await Runner.create({ stateDir: path.join(await tempDir("state-live"), "state"), agentId: "test-live-log", maxLogLines: MAX_LINES });
  const source = `import os\ndef handle(event, context):\n    print("secret is " + os.environ.get("KEY", ""))\n    for i in range(${PRINTED}):\n        print("line %d " % i + "x" * 2000)\n    return "printed"\n`;
  printer = await buildFiles("py", [{ name: "handler.py", data: source }]);
});

afterAll(async () => {
  await runner?.shutdown();
  await removeTempDirs();
});

async function run(live: LiveLog) {
  return runner.invoke({ ...call(printer, "py", {}), env: { KEY: SECRET }, live });
}

describe("a followed call's live output (agent/work/live-log.ts)", () => {
  it("streams the lines the call's log keeps, numbered from 0, within the frame size, secrets masked, and says once where the bound cut it", async () => {
    const frames: TaskLog[] = [];
    const live = new LiveLog("t1", (m) => frames.push(m), [SECRET]);
    live.follow(true);
    const res = await run(live);
    expect(res.status).toBe(200);
    const streamed = frames.flatMap((f) => f.lines);
    // Numbered without a gap or an overlap, from line 0.
    let next = 0;
    for (const f of frames) {
      expect(f.first).toBe(next);
      next += f.lines.length;
      expect(Buffer.byteLength(JSON.stringify(f.lines))).toBeLessThanOrEqual(LIVE_LOG_FRAME_BYTES + 2);
    }
    expect(streamed[0]).toBe("secret is ***");
    // The lines kept (all but the last, whose place the finished log's cut note takes) are the streamed ones.
    expect(streamed).toHaveLength(MAX_LINES);
    expect(res.log.slice(0, -1)).toEqual(streamed.slice(0, MAX_LINES - 1).map((l) => (l === "secret is ***" ? `secret is ${SECRET}` : l)));
    expect(frames.filter((f) => f.cut)).toHaveLength(1);
  }, 60_000);

  it("sends nothing for a call nobody follows", async () => {
    const frames: TaskLog[] = [];
    const res = await run(new LiveLog("t2", (m) => frames.push(m), [SECRET]));
    expect(res.status).toBe(200);
    expect(frames).toEqual([]);
  }, 60_000);

  it("stops when the follow ends", async () => {
    const frames: TaskLog[] = [];
    const live = new LiveLog("t3", (m) => frames.push(m), []);
    live.follow(true);
    live.follow(false);
    expect((await run(live)).status).toBe(200);
    expect(frames).toEqual([]);
  }, 60_000);
});
