import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { zipItems } from "../support/zip.js";
import { localStack, type AgentProcess, type Api, type LocalWorker } from "./harness.js";
import { deploy, result } from "./deploy.js";

/**
 * Retries, dead letters and the concurrency cap end to end: the local service, a real agent and
 * Docker. The functions count their own attempts through their storage (GC-Storage), and log when
 * each call ran, so what they see is what ran.
 */
let worker: LocalWorker;
let agent: AgentProcess;
let user: Api;

/** Fails (503) until its third call, counting calls in its storage. */
const FLAKY = `import base64
def handle(event, context):
    stored = event.headers.get("gc-storage")
    n = int(base64.b64decode(stored).decode()) + 1 if stored else 1
    print("call", n)
    status = 200 if n >= 3 else 503
    return {"statusCode": status, "headers": {"Content-Type": "text/plain", "GC-Storage": base64.b64encode(str(n).encode()).decode()}, "body": "call %d" % n}
`;

const BROKEN = `def handle(event, context):
    print("no stock for", event.query.get("item"))
    raise RuntimeError("warehouse down")
`;

/** Keeps the last dead letter it got in its storage, for the owner to read. */
const DEAD_LETTER = `import base64
def handle(event, context):
    return {"statusCode": 200, "headers": {"Content-Type": "text/plain", "GC-Storage": base64.b64encode(event.raw_body).decode()}, "body": "noted"}
`;

/** Sleeps half a second and logs when it ran, by the host's clock (containers share it). */
const SLEEPER = `import time
def handle(event, context):
    start = time.time()
    time.sleep(0.5)
    print("ran %.6f %.6f" % (start, time.time()))
    return "ok"
`;

/** The most intervals that overlap at any instant. */
function mostAtOnce(intervals: [number, number][]): number {
  const edges = intervals.flatMap(([a, b]) => [[a, 1] as const, [b, -1] as const]).sort((x, y) => x[0] - y[0] || x[1] - y[1]);
  let now = 0;
  let most = 0;
  for (const [, d] of edges) most = Math.max(most, (now += d));
  return most;
}

const setRetry = (fn: string, json: Record<string, unknown>) => user.json("PUT", `/v1/function/${fn}/retry`, 204, { json });

beforeAll(async () => {
  await ensureOfflineImages(["py"]);
  // More slots than the cap below, so that only the cap can hold its tasks back.
  ({ worker, agent, user } = await localStack({ account: "retries", nodeId: "retry-agent", agentArgs: ["--slots", "6"] }));
}, 1_800_000);

afterAll(async () => {
  await agent?.stop();
  await worker?.dispose();
});

describe("retries with a real agent", () => {
  it("runs a function that fails twice a third time, and records its success with every attempt's log", async () => {
    const fn = await deploy(user, "py", await zipItems([{ name: "handler.py", data: FLAKY }]), "flaky");
    expect(fn.build.status, fn.build.log.join("\n")).toBe("SUCCESS");
    await setRetry(fn.functionId, { maxAttempts: 3, backoffSeconds: 1, deadLetterFunctionId: null });
    const { id } = await user.json("POST", `/v1/task/${fn.functionId}`, 201, {});
    expect(await result(user, id)).toEqual({ status: 200, contentType: "text/plain", body: "call 3" });
    expect(await user.json("GET", `/v1/task/${id}`, 200)).toMatchObject({ status: 200, attempts: 3 });
    const { log } = await user.json("GET", `/v1/task/${id}/log`, 200);
    expect(log.filter((l: string) => /^--- attempt \d ---$/.test(l) || l.startsWith("call "))).toEqual(["--- attempt 1 ---", "call 1", "--- attempt 2 ---", "call 2", "--- attempt 3 ---", "call 3"]);
  }, 600_000);

  it("sends a task that always fails to the dead-letter function once its attempts run out", async () => {
    const broken = await deploy(user, "py", await zipItems([{ name: "handler.py", data: BROKEN }]), "broken");
    const letters = await deploy(user, "py", await zipItems([{ name: "handler.py", data: DEAD_LETTER }]), "letters");
    expect([broken.build.status, letters.build.status]).toEqual(["SUCCESS", "SUCCESS"]);
    await setRetry(broken.functionId, { maxAttempts: 2, backoffSeconds: 1, deadLetterFunctionId: letters.functionId });
    const { id } = await user.json("POST", `/v1/task/${broken.functionId}?item=book`, 201, { json: { qty: 2 } });
    expect((await result(user, id)).status).toBe(500);
    expect(await user.json("GET", `/v1/task/${id}`, 200)).toMatchObject({ status: 500, attempts: 2 });
    const stored = await (async () => {
      for (let i = 0; i < 240; i++) {
        const res = await user("GET", `/v1/function/${letters.functionId}/storage`);
        if (res.status === 200) return (await res.json()) as { value: string };
        await res.body?.cancel();
        await new Promise((r) => setTimeout(r, 250));
      }
      throw new Error("the dead-letter function never stored a letter");
    })();
    const letter = JSON.parse(Buffer.from(stored.value, "base64").toString());
    expect(letter).toMatchObject({ taskId: id, functionId: broken.functionId, status: 500, attempts: 2, input: { method: "POST", query: { item: "book" }, contentType: "application/json" } });
    expect(Buffer.from(letter.input.body, "base64").toString()).toBe('{"qty":2}');
    expect(letter.logTail).toContain("--- attempt 2 ---");
    expect(letter.logTail).toContain("no stock for book");
  }, 600_000);
});

describe("a concurrency cap with a real agent", () => {
  it("runs 50 calls of a function capped at 3 never more than 3 at once, by the function's own clock", async () => {
    const fn = await deploy(user, "py", await zipItems([{ name: "handler.py", data: SLEEPER }]), "sleeper");
    expect(fn.build.status, fn.build.log.join("\n")).toBe("SUCCESS");
    await user.json("PUT", `/v1/function/${fn.functionId}/concurrency`, 204, { json: { max: 3 } });
    const ids: string[] = [];
    for (let i = 0; i < 50; i++) ids.push((await user.json("POST", `/v1/task/${fn.functionId}`, 201, {})).id);
    const intervals: [number, number][] = [];
    for (const id of ids) {
      expect((await result(user, id)).status).toBe(200);
      const { log } = await user.json("GET", `/v1/task/${id}/log`, 200);
      const m = /^ran (\S+) (\S+)$/.exec(log.find((l: string) => l.startsWith("ran ")) ?? "");
      expect(m, log.join("\n")).not.toBeNull();
      intervals.push([Number(m![1]), Number(m![2])]);
    }
    expect(mostAtOnce(intervals)).toBe(3);
  }, 600_000);
});
