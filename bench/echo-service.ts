import { ensureOfflineImages } from "../agent/runtimes/images.js";
import { AgentProcess, api } from "../test/e2e/harness.js";
import { deploy } from "../test/e2e/deploy.js";
import { zipSources } from "../test/support/zip.js";
import { benchWorker } from "./target.js";
import type { WorkerOptions } from "../scripts/lib/local-service.js";

/** The Python function the dispatch benchmarks drive: it answers its JSON body back. */
export const ECHO_HANDLER = { "handler.py": "def handle(event, context):\n    return {'echo': event.json}\n" };

/**
 * The whole service (the Worker: local, or the one at `url`; one agent on this machine with `slots`
 * slots) with the echo function deployed, and the two ways to call it: create → result (two
 * requests) and Prefer: wait (one), on `/v1/task` and on the function's public endpoint.
 */
export async function startEchoService(slots: string, url?: string, local: WorkerOptions = {}) {
  await ensureOfflineImages(["py"]);
  const worker = await benchWorker(url, local);
  const admin = api(worker.url, worker.adminToken);
  const user = api(worker.url, (await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "bench" } })).token);
  const agent = await AgentProcess.start(worker, await worker.agentToken("bench"), "bench", ["--slots", slots]);
  const stop = async () => {
    await agent.stop();
    await worker.dispose();
  };
  let functionId: string;
  let endpointId: string;
  try {
    ({ functionId } = await deploy(user, "py", await zipSources(ECHO_HANDLER), "bench"));
    ({ id: endpointId } = await user.json("POST", `/v1/endpoint/${functionId}`, 201, { json: {} }));
  } catch (e) {
    await stop();
    throw e;
  }
  const once = async (i: number) => {
    const { id } = await user.json("POST", `/v1/task/${functionId}`, 201, { json: { i } });
    const res = await user("GET", `/v1/task/${id}/result?wait=30`);
    if (res.status !== 200) throw new Error(`task ${id}: ${res.status} ${await res.text()}`);
    await res.text();
  };
  // One request (RFC 7240 Prefer: wait): the function's own response, or a 201 had it not finished.
  const sync = async (i: number) => {
    const res = await user("POST", `/v1/task/${functionId}`, { json: { i }, headers: { prefer: "wait=30" } });
    if (res.status !== 200 || res.headers.get("preference-applied") !== "wait") throw new Error(`sync call: ${res.status} ${await res.text()}`);
    await res.text();
  };
  // The same through the function's public endpoint, anonymously (`/gc/<endpoint id>`).
  const publicSync = async (i: number) => {
    const res = await fetch(`${worker.url}/gc/${endpointId}`, { method: "POST", body: JSON.stringify({ i }), headers: { "content-type": "application/json", prefer: "wait=30" } });
    if (res.status !== 200 || res.headers.get("preference-applied") !== "wait") throw new Error(`/gc call: ${res.status} ${await res.text()}`);
    await res.text();
  };
  // Create → result while a follower reads the task's live log to its end (docs/logs.md).
  const followed = async (i: number) => {
    const { id } = await user.json("POST", `/v1/task/${functionId}`, 201, { json: { i } });
    const follow = user("GET", `/v1/task/${id}/log?follow=1`, { headers: { accept: "text/event-stream" } });
    const res = await user("GET", `/v1/task/${id}/result?wait=30`);
    if (res.status !== 200) throw new Error(`task ${id}: ${res.status} ${await res.text()}`);
    await res.text();
    const events = await (await follow).text();
    if (!events.includes("event: end")) throw new Error(`task ${id}: the follower got no end: ${events.slice(0, 200)}`);
  };
  return { worker, admin, user, functionId, endpointId, once, sync, publicSync, followed, stop };
}
