import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { zipItems } from "../support/zip.js";
import { localStack, type AgentProcess, type Api, type LocalWorker } from "./harness.js";
import { deploy } from "./deploy.js";

/**
 * Idempotency-Key against the real stack (local Worker, an agent, Docker): a function that counts
 * its own runs in its storage shows that fifty concurrent calls under one key ran it once.
 */
let worker: LocalWorker;
let agent: AgentProcess;
let user: Api;

/** Counts its runs in GC-Storage and answers with the count. */
const COUNTER = `import base64
def handle(event, context):
    stored = event.headers.get("gc-storage")
    n = int(base64.b64decode(stored).decode()) + 1 if stored else 1
    return {"statusCode": 200, "headers": {"Content-Type": "text/plain", "GC-Storage": base64.b64encode(str(n).encode()).decode()}, "body": "run %d" % n}
`;

beforeAll(async () => {
  await ensureOfflineImages(["py"]);
  ({ worker, agent, user } = await localStack({ account: "idempotency", nodeId: "idem-agent", agentArgs: ["--slots", "4"] }));
}, 1_800_000);

afterAll(async () => {
  await agent?.stop();
  await worker?.dispose();
});

describe("Idempotency-Key with a real agent", () => {
  it("runs a function once for fifty concurrent synchronous calls under one key, on the API and on /gc", async () => {
    const fn = await deploy(user, "py", await zipItems([{ name: "handler.py", data: COUNTER }]), "counter");
    expect(fn.build.status, fn.build.log.join("\n")).toBe("SUCCESS");
    const { id: ep } = await user.json("POST", `/v1/endpoint/${fn.functionId}`, 201, { json: { dailyLimit: 10 } });

    const calls = (send: () => Promise<Response>) =>
      Promise.all(Array.from({ length: 50 }, async () => {
        const res = await send();
        return { status: res.status, body: await res.text(), task: res.headers.get("x-task-id"), replayed: res.headers.get("idempotent-replayed") };
      }));
    const api = await calls(() => user("POST", `/v1/task/${fn.functionId}`, { json: { order: 7 }, headers: { "idempotency-key": "order-7", prefer: "wait=30" } }));
    expect(new Set(api.map((a) => `${a.status} ${a.body} ${a.task}`))).toEqual(new Set([`200 run 1 ${api[0]!.task}`]));
    expect(api.filter((a) => a.replayed === "true")).toHaveLength(49);

    const pub = await calls(() => fetch(`${worker.url}/gc/${ep}`, { method: "POST", body: "pay", headers: { "content-type": "text/plain", "idempotency-key": "pay-1", prefer: "wait=30" } }));
    // Past the account's 32 synchronous waits on /gc, a call is answered as without Prefer: 201 {id}, of the same task.
    const named = new Set(pub.map((a) => (a.status === 201 ? (JSON.parse(a.body) as { id: string }).id : a.task)));
    expect(named.size).toBe(1);
    expect(new Set(pub.filter((a) => a.status !== 201).map((a) => `${a.status} ${a.body}`))).toEqual(new Set(["200 run 2"]));
    expect((await user.json("GET", `/v1/endpoint/${ep}/metrics`, 200)).todayTasks).toBe(1);
    expect((await user.json("GET", `/v1/task/list?functionId=${fn.functionId}`, 200)).length).toBe(2);
  }, 600_000);
});
