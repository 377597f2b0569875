import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { zipSources } from "../support/zip.js";
import { ADMIN_TOKEN, AgentProcess, api, LocalWorker, type Api } from "./harness.js";
import { deploy, result } from "./deploy.js";

let worker: LocalWorker;
let user: Api;
let agent: AgentProcess;

/** Each step appends its name to the list it receives, so the chain's path is visible at the end. */
const step = (name: string) => ({
  "handler.py": [
    "def handle(event, context):",
    "    seen = event.json if isinstance(event.json, list) else []",
    `    return seen + ["${name}"]`,
    "",
  ].join("\n"),
});

beforeAll(async () => {
  await ensureOfflineImages(["py"]);
  worker = await LocalWorker.create();
  const admin = api(worker.url, ADMIN_TOKEN);
  user = api(worker.url, (await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "chains" } })).token);
  agent = await AgentProcess.start(worker, await worker.agentToken("chain-agent"), "chain-agent", ["--slots", "4"]);
}, 1_800_000);

afterAll(async () => {
  await agent?.stop();
  await worker?.dispose();
});

/** A request from a chosen loopback source address: the local CF-Connecting-IP is that address. */
function requestFrom(localAddress: string, url: string, headers: Record<string, string> = {}): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: "POST", localAddress, headers: { "content-type": "application/json", ...headers } }, (res) => {
      let body = "";
      res.on("data", (d) => (body += d));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end("{}");
  });
}

describe("trigger chains with real agents", () => {
  it("A → B → C passes each result on, and a non-matching status does not fire", async () => {
    const a = await deploy(user, "py", await zipSources(step("a")), "a");
    const b = await deploy(user, "py", await zipSources(step("b")), "b");
    const c = await deploy(user, "py", await zipSources(step("c")), "c");
    await user.json("POST", "/v1/trigger", 201, { json: { functionId: a.functionId, nextId: b.functionId, includeResult: true, status: 200 } });
    await user.json("POST", "/v1/trigger", 201, { json: { functionId: b.functionId, nextId: c.functionId, includeResult: true, status: 200 } });
    await user.json("POST", "/v1/trigger", 201, { json: { functionId: b.functionId, nextId: a.functionId, includeResult: true, status: 500 } });
    const { id } = await user.json("POST", `/v1/task/${a.functionId}`, 201, { json: [] });
    expect(JSON.parse((await result(user, id)).body)).toEqual(["a"]);
    let last: { id: string } | undefined;
    for (let i = 0; i < 100 && !last; i++) {
      const list = await user.json("GET", `/v1/task/list?functionId=${c.functionId}`, 200);
      last = list[0];
      if (!last) await new Promise((r) => setTimeout(r, 200));
    }
    expect(JSON.parse((await result(user, last!.id)).body)).toEqual(["a", "b", "c"]);
    const third = await user.json("GET", `/v1/task/${last!.id}`, 200);
    const second = await user.json("GET", `/v1/task/${third.parentTaskId}`, 200);
    expect(second).toMatchObject({ functionId: b.functionId, parentTaskId: id });
    expect(await user.json("GET", `/v1/task/list?functionId=${a.functionId}`, 200)).toHaveLength(1);
  });
});

describe("the public door on local workerd", () => {
  it("refuses a caller from 127.0.0.9 against an ip list, and serves 127.0.0.1 with a public result", async () => {
    const fn = await deploy(user, "py", await zipSources(step("public")), "pub");
    const { id: ep } = await user.json("POST", `/v1/endpoint/${fn.functionId}`, 201, { json: { ip: ["127.0.0.1"] } });
    const refused = await requestFrom("127.0.0.9", `${worker.url}/gc/${ep}`);
    expect(refused.status).toBe(403);
    expect(JSON.parse(refused.body).error.code).toBe("ip_not_allowed");
    const accepted = await requestFrom("127.0.0.1", `${worker.url}/gc/${ep}`);
    expect(accepted.status).toBe(201);
    const { id } = JSON.parse(accepted.body);
    const res = await fetch(`${worker.url}/gc/${id}/result?wait=30`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(["public"]);
    expect(await user.json("GET", `/v1/endpoint/${ep}/metrics`, 200)).toEqual({ todayTasks: 1, pendingTasks: 0, weekTasks: 1 });
  });

  it("believes the connection, not an address the client claims in CF-Connecting-IP or X-Forwarded-For", async () => {
    const fn = await deploy(user, "py", await zipSources(step("claimed")), "claimed");
    const { id: elsewhere } = await user.json("POST", `/v1/endpoint/${fn.functionId}`, 201, { json: { ip: ["203.0.113.7"] } });
    const { id: here } = await user.json("POST", `/v1/endpoint/${fn.functionId}`, 201, { json: { ip: ["127.0.0.1"] } });
    const claims: Record<string, string>[] = [{ "CF-Connecting-IP": "203.0.113.7" }, { "X-Forwarded-For": "203.0.113.7" }, { "cf-connecting-ip": "203.0.113.7", "X-Forwarded-For": "203.0.113.7" }];
    for (const claim of claims) {
      const refused = await requestFrom("127.0.0.1", `${worker.url}/gc/${elsewhere}`, claim);
      expect([refused.status, JSON.parse(refused.body).error.code]).toEqual([403, "ip_not_allowed"]);
      expect((await requestFrom("127.0.0.1", `${worker.url}/gc/${here}`, claim)).status).toBe(201);
    }
  });
});
