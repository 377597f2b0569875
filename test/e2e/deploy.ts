import { setTimeout as sleep } from "node:timers/promises";
import type { Api } from "./harness.js";

/** Creates a function, uploads a zip, and waits for the build to end; returns ids and the build. */
export async function deploy(api: Api, lang: string, zip: Buffer, name = "fn") {
  const { id } = await api.json("POST", "/v1/function", 201, { json: { name, lang: lang.toUpperCase(), type: "DOCKER" } });
  const build = await api.json("POST", `/v1/build/${id}?arch=amd64`, 201, { body: zip, headers: { "content-type": "application/octet-stream" } });
  const done = await waitBuild(api, build.id);
  return { functionId: id as string, buildId: build.id as string, build: done };
}

export async function waitBuild(api: Api, buildId: string, timeoutMs = 600_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const b = await api.json("GET", `/v1/build/${buildId}`, 200);
    if (b.status === "SUCCESS" || b.status === "FAILED") return b;
    if (Date.now() > deadline) throw new Error(`build ${buildId} still ${b.status}: ${b.log.join("\n")}`);
    await sleep(250);
  }
}

/** Issues a task and waits for its result (the result operation's own ?wait). */
export async function invoke(api: Api, functionId: string, o: { query?: string; json?: unknown } = {}) {
  const { id } = await api.json("POST", `/v1/task/${functionId}${o.query ?? ""}`, 201, o.json === undefined ? {} : { json: o.json });
  return { id: id as string, res: await result(api, id) };
}

export async function result(api: Api, taskId: string, timeoutMs = 120_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const res = await api("GET", `/v1/task/${taskId}/result?wait=10`);
    if (res.status !== 202) return { status: res.status, contentType: res.headers.get("content-type"), body: await res.text() };
    await res.body?.cancel();
    if (Date.now() > deadline) throw new Error(`task ${taskId} did not finish`);
  }
}
