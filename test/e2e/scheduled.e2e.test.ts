import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { zipSources } from "../support/zip.js";
import { ADMIN_TOKEN, AgentProcess, api, LocalWorker, type Api } from "./harness.js";
import { deploy, result } from "./deploy.js";

let worker: LocalWorker;
let user: Api;
let agent: AgentProcess;
let functionId: string;

/** Answers what it was given: the query, the Content-Type and the body's bytes in hex. */
const echo = {
  "handler.py": [
    "def handle(event, context):",
    "    body = event.body if isinstance(event.body, (bytes, bytearray)) else (event.body or '').encode()",
    "    return {'method': event.method, 'query': event.query, 'contentType': event.headers.get('content-type'), 'bodyHex': bytes(body).hex()}",
    "",
  ].join("\n"),
};

/**
 * Text with a byte-order mark, CR LF, a NUL and multi-byte characters: every byte must arrive as
 * sent. (Non-UTF-8 payloads are covered in workerd, test/worker/scheduled.test.ts: the language
 * shims hand handlers the body as text.)
 */
const PAYLOAD = Buffer.from("\ufeffGrüße\r\n✓\u0000end", "utf8");

beforeAll(async () => {
  await ensureOfflineImages(["py"]);
  worker = await LocalWorker.create();
  const admin = api(worker.url, ADMIN_TOKEN);
  user = api(worker.url, (await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "scheduled" } })).token);
  agent = await AgentProcess.start(worker, await worker.agentToken("scheduled-agent"), "scheduled-agent", ["--slots", "2"]);
  functionId = (await deploy(user, "py", await zipSources(echo), "echo")).functionId;
}, 1_800_000);

afterAll(async () => {
  await agent?.stop();
  await worker?.dispose();
});

async function scheduleWithPayload(cron: string): Promise<string> {
  const { id } = await user.json("POST", "/v1/scheduled", 201, { json: { functionId, cron, timezone: "America/New_York", description: "e2e" } });
  await user.json("PUT", `/v1/scheduled/${id}/payload?who=cron&n=1&n=2`, 204, { body: PAYLOAD, headers: { "content-type": "application/x-gcfaas-test" } });
  return id;
}

/** The tasks a schedule issued so far (newest first). */
async function tasksOf(scheduleId: string): Promise<string[]> {
  const list: { id: string }[] = await user.json("GET", `/v1/task/list?functionId=${functionId}`, 200);
  const described = await Promise.all(list.map((t) => user.json("GET", `/v1/task/${t.id}`, 200)));
  return described.filter((t) => t.scheduledId === scheduleId).map((t) => t.id);
}

const expectPayloadDelivered = (body: string) =>
  expect(JSON.parse(body)).toEqual({ method: "POST", query: { who: "cron", n: ["1", "2"] }, contentType: "application/x-gcfaas-test", bodyHex: PAYLOAD.toString("hex") });

describe("scheduled functions with the local service and a real agent", () => {
  it("an every-minute schedule runs its function with its payload within 70 s", async () => {
    const id = await scheduleWithPayload("* * * * *");
    const deadline = Date.now() + 70_000;
    let issued: string[] = [];
    while (issued.length === 0 && Date.now() < deadline) {
      await sleep(2_000);
      issued = await tasksOf(id);
    }
    expect(issued.length, "a task within 70 s").toBeGreaterThan(0);
    const res = await result(user, issued[issued.length - 1]!);
    expect(res.status).toBe(200);
    expectPayloadDelivered(res.body);
    await user.json("DELETE", `/v1/scheduled/${id}`, 204);
  });

  it("try runs it at once, with the payload, as a task that names the schedule", async () => {
    const id = await scheduleWithPayload("0 0 1 1 *");
    const { id: taskId } = await user.json("POST", `/v1/scheduled/${id}/try`, 201);
    const res = await result(user, taskId);
    expect(res.status).toBe(200);
    expectPayloadDelivered(res.body);
    expect(await user.json("GET", `/v1/task/${taskId}`, 200)).toMatchObject({ functionId, scheduledId: id, status: 200 });
    await user.json("DELETE", `/v1/scheduled/${id}`, 204);
  });
});
