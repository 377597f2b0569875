import { callJson, deployedFunction, tinyZip, finishTask, newAccount, newEndpoint, newTag, newTask, newTrigger, sql, uploadBuild } from "./helpers.js";

/** One account holding one record of every kind, for the auth and isolation tables. */
export async function accountWithEverything() {
  const acct = await newAccount("owner");
  const { token, accountId } = acct;
  const tag = await newTag(token, { name: "owned" });
  const fn = await deployedFunction(token, { name: "owned", tag: [tag] });
  const next = await deployedFunction(token, { name: "next" });
  const trigger = await newTrigger(token, { functionId: fn, nextId: next, tag: [tag] });
  const endpoint = await newEndpoint(token, fn, { tag: [tag] });
  const schedule = (await callJson<{ id: string }>("/v1/scheduled", 201, { token, json: { functionId: fn, cron: "0 0 1 1 *", timezone: "UTC" } })).id;
  const build = (await uploadBuild(token, fn)).id;
  const task = await newTask(token, fn);
  const finished = await newTask(token, fn);
  await finishTask(finished, { contentType: "text/plain", body: "secret result" });
  // Its status is the trigger's: it fires a task of `next`, the account's third task.
  const chained = await firedTask(token, next);
  const invoice = `inv${accountId}`;
  await sql(
    `insert into invoices (id, account_id, amount, description, status, period, created_at)
     values (?, ?, 10, 'DEVELOPER (100000 invocations)', 'open', '2026-11', ?)`,
    invoice,
    accountId,
    Date.now(),
  );
  return { ...acct, tag, fn, next, trigger, endpoint, schedule, build, task, finished, chained, invoice };
}
/** The task a trigger fired of `functionId` (firing follows the parent's record, so it is waited for). */
async function firedTask(token: string, functionId: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const [fired] = await callJson<{ id: string }[]>(`/v1/task/list?functionId=${functionId}`, 200, { token });
    if (fired) return fired.id;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`no task of ${functionId} was fired`);
}

export type Owned = Awaited<ReturnType<typeof accountWithEverything>>;

export interface Route {
  method: string;
  path: (o: Owned) => string;
  /** A valid body, so that only the token (or the owner) decides the answer. */
  json?: (o: Owned) => unknown;
  body?: () => BodyInit;
  headers?: Record<string, string>;
}

/** Every /v1 record route of the specification and the decisions (the tables call the app directly: see callDirect). */
export const ROUTES: Route[] = [
  { method: "POST", path: () => "/v1/function", json: () => ({ name: "x", lang: "GO", type: "DOCKER" }) },
  { method: "GET", path: () => "/v1/function/list" },
  { method: "GET", path: (o) => `/v1/function/list?tag=${o.tag}` },
  { method: "GET", path: (o) => `/v1/function/${o.fn}` },
  { method: "PATCH", path: (o) => `/v1/function/${o.fn}`, json: () => ({ name: "renamed" }) },
  { method: "POST", path: (o) => `/v1/function/${o.fn}/togglePause` },
  { method: "GET", path: (o) => `/v1/function/${o.fn}/capabilities` },
  { method: "POST", path: (o) => `/v1/function/${o.fn}/capabilities`, json: () => ({ timeout: 99 }) },
  { method: "GET", path: (o) => `/v1/function/${o.fn}/release` },
  // (POST …/rollback is not here: the owned function has one successful build, so it answers 409;
  // releases.test.ts shows its 404 for another account.)
  { method: "PUT", path: (o) => `/v1/function/${o.fn}/release`, json: () => ({ buildId: null }) },
  { method: "GET", path: (o) => `/v1/function/${o.fn}/network` },
  { method: "PUT", path: (o) => `/v1/function/${o.fn}/network`, json: () => ({ egress: "none" }) },
  { method: "GET", path: (o) => `/v1/function/${o.fn}/retry` },
  { method: "PUT", path: (o) => `/v1/function/${o.fn}/retry`, json: (o) => ({ maxAttempts: 2, backoffSeconds: 5, deadLetterFunctionId: o.next }) },
  { method: "GET", path: (o) => `/v1/function/${o.fn}/concurrency` },
  { method: "PUT", path: (o) => `/v1/function/${o.fn}/concurrency`, json: () => ({ max: 2 }) },
  { method: "DELETE", path: (o) => `/v1/function/${o.fn}` },
  { method: "POST", path: () => "/v1/tag", json: () => ({ name: "x" }) },
  { method: "GET", path: () => "/v1/tag/list" },
  { method: "PATCH", path: (o) => `/v1/tag/${o.tag}`, json: () => ({ name: "renamed" }) },
  { method: "DELETE", path: (o) => `/v1/tag/${o.tag}` },
  { method: "POST", path: () => "/v1/trigger", json: (o) => ({ functionId: o.fn, nextId: o.next, includeResult: true }) },
  { method: "GET", path: () => "/v1/trigger/list" },
  { method: "GET", path: (o) => `/v1/trigger/${o.trigger}` },
  { method: "PATCH", path: (o) => `/v1/trigger/${o.trigger}`, json: () => ({ status: 500 }) },
  { method: "DELETE", path: (o) => `/v1/trigger/${o.trigger}` },
  { method: "POST", path: () => "/v1/scheduled", json: (o) => ({ functionId: o.fn, cron: "0 0 1 1 *", timezone: "UTC" }) },
  { method: "GET", path: () => "/v1/scheduled/list" },
  { method: "GET", path: (o) => `/v1/scheduled/${o.schedule}` },
  { method: "PATCH", path: (o) => `/v1/scheduled/${o.schedule}`, json: () => ({ active: false, cron: "0 0 1 1 *", timezone: "UTC" }) },
  { method: "PUT", path: (o) => `/v1/scheduled/${o.schedule}/payload?q=1`, body: () => "payload", headers: { "content-type": "text/plain" } },
  { method: "POST", path: (o) => `/v1/scheduled/${o.schedule}/try` },
  { method: "DELETE", path: (o) => `/v1/scheduled/${o.schedule}` },
  { method: "POST", path: (o) => `/v1/endpoint/${o.fn}`, json: () => ({}) },
  { method: "GET", path: () => "/v1/endpoint/list" },
  { method: "GET", path: (o) => `/v1/endpoint/${o.endpoint}` },
  { method: "GET", path: (o) => `/v1/endpoint/${o.endpoint}/metrics` },
  { method: "PATCH", path: (o) => `/v1/endpoint/${o.endpoint}`, json: () => ({ dailyLimit: 0 }) },
  { method: "DELETE", path: (o) => `/v1/endpoint/${o.endpoint}` },
  { method: "POST", path: (o) => `/v1/build/${o.fn}?arch=amd64`, body: () => tinyZip(), headers: { "content-type": "application/octet-stream" } },
  { method: "GET", path: () => "/v1/build/list" },
  { method: "GET", path: (o) => `/v1/build/${o.build}` },
  { method: "GET", path: (o) => `/v1/build/${o.build}/log` },
  { method: "POST", path: (o) => `/v1/task/${o.fn}`, json: () => ({ a: 1 }) },
  { method: "GET", path: () => "/v1/task/list" },
  { method: "GET", path: (o) => `/v1/task/${o.task}` },
  { method: "GET", path: (o) => `/v1/task/${o.finished}/result` },
  { method: "GET", path: (o) => `/v1/task/${o.finished}/log` },
  // Live: a finished task's stream ends at once (a tail never does; live-logs.test.ts has its 404).
  { method: "GET", path: (o) => `/v1/task/${o.finished}/log?follow=1`, headers: { accept: "text/event-stream" } },
  { method: "GET", path: () => "/v1/invoice/list" },
  { method: "GET", path: (o) => `/v1/invoice/${o.invoice}` },
];

export const describeRoute = (r: Route, o: Owned) => `${r.method} ${r.path(o)}`;

/** The request of a route: its valid body (JSON or raw), with extra headers on top. */
export function requestOf(r: Route, o: Owned, headers: Record<string, string> = {}) {
  const body = r.json ? JSON.stringify(r.json(o)) : r.body?.();
  return {
    method: r.method,
    headers: { ...r.headers, ...(r.json ? { "content-type": "application/json" } : {}), ...headers },
    ...(body === undefined ? {} : { body }),
  };
}
