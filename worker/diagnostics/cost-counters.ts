import type { Bindings } from "../env.js";
import { secretEquals } from "../lib/ids.js";
import { bearer } from "../middleware/auth.js";
import type { Dispatcher } from "../dispatch/durable-object.js";

/**
 * What a task costs the Worker's host, counted (bench/cost.ts reads it): HTTP requests, D1 round
 * trips and statements, Durable Object RPC calls and fetches, dispatcher storage statements and
 * alarm calls, R2 operations, WebSocket frames and bytes each way.
 *
 * Only with the binding COST_COUNTERS = "1" (never in wrangler.toml; scripts/lib/serve-worker.ts
 * sets it from GCFAAS_COST_COUNTERS). Counting works by wrapping the runtime's own classes and the
 * Durable Object namespaces once it is on, so with it off the request path carries nothing of it
 * but the one check in withCostCounting(). The counts live in the isolate: locally the Worker and
 * its Durable Objects share one, so one counter sees both sides.
 */
const counts = new Map<string, number>();
let installed = false;

export function count(name: string, n = 1): void {
  counts.set(name, (counts.get(name) ?? 0) + n);
}

type Fetch = (req: Request, env: Bindings, ctx: ExecutionContext) => Response | Promise<Response>;

/** The Worker's fetch handler; with counting on, counted, and /__cost/* answers the benchmark. */
export function withCostCounting(fetch: Fetch, dispatcher: typeof Dispatcher): Fetch {
  return (req, env, ctx) => {
    if (env.COST_COUNTERS !== "1") return fetch(req, env, ctx);
    install(env, dispatcher);
    const url = new URL(req.url);
    if (url.pathname.startsWith("/__cost/")) return costRoute(req, url, env);
    if (url.pathname !== "/healthz") count(`http ${req.method} ${routeOf(url.pathname)}`);
    return fetch(req, countedEnv(env), ctx);
  };
}

/** A path with its ids left out: `/v1/task/<id>/result` counts as `/v1/task/:/result`. */
const routeOf = (path: string) => path.split("/").map((s, i) => (i > 2 && /\d|-/.test(s) ? ":" : s)).join("/");

function patch(proto: object | null | undefined, method: string, before: (self: unknown, args: unknown[]) => void): void {
  if (!proto) return;
  const original = (proto as Record<string, unknown>)[method];
  if (typeof original !== "function") return;
  (proto as Record<string, unknown>)[method] = function (this: unknown, ...args: unknown[]) {
    before(this, args);
    return original.apply(this, args);
  };
}

const frameBytes = (data: unknown) => (typeof data === "string" ? new TextEncoder().encode(data).byteLength : data instanceof ArrayBuffer ? data.byteLength : 0);

function install(env: Bindings, dispatcher: typeof Dispatcher): void {
  if (installed) return;
  installed = true;
  // D1: a statement's all/run/first/raw is one round trip; a batch is one round trip of n statements.
  const statement = Object.getPrototypeOf(env.DB.prepare("select 1")) as object;
  for (const m of ["all", "run", "first", "raw"]) patch(statement, m, () => (count("d1 round trips"), count("d1 statements")));
  patch(Object.getPrototypeOf(env.DB), "prepare", (_, [query]) => count(`d1 sql: ${String(query).replace(/\s+/g, " ").slice(0, 60)}`));
  patch(Object.getPrototypeOf(env.DB), "batch", (_, [stmts]) => (count("d1 round trips"), count("d1 statements", (stmts as unknown[]).length)));
  for (const m of ["get", "put", "head", "delete", "list"]) patch(Object.getPrototypeOf(env.BUCKET), m, () => count(`r2 ${m}`));
  patch(WebSocket.prototype, "send", (_, [data]) => (count("ws frames out"), count("ws bytes out", frameBytes(data))));
  const proto = dispatcher.prototype as unknown as Record<string, unknown>;
  patch(proto, "webSocketMessage", (_, [, data]) => (count("ws frames in"), count("ws bytes in", frameBytes(data))));
  patch(proto, "alarm", () => count("do alarms"));
  // The dispatcher's storage is reached from its first call: the object's own classes, patched once.
  let storagePatched = false;
  for (const m of ["createTask", "enqueue", "enqueueAndAwait", "awaitOwnTask", "webSocketMessage"])
    patch(proto, m, (self) => {
      if (storagePatched) return;
      storagePatched = true;
      const storage = (self as { ctx: DurableObjectState }).ctx.storage;
      patch(Object.getPrototypeOf(storage.sql), "exec", () => count("do storage statements"));
      for (const a of ["getAlarm", "setAlarm"]) patch(Object.getPrototypeOf(storage), a, () => count(`do storage ${a}`));
    });
}

/** The env with its Durable Object namespaces counting each stub call. */
function countedEnv(env: Bindings): Bindings {
  return { ...env, DISPATCHER: countedNamespace(env.DISPATCHER, "dispatcher"), ENDPOINT_COUNTER: countedNamespace(env.ENDPOINT_COUNTER, "counter") };
}

function countedNamespace<T extends object>(ns: T, name: string): T {
  return new Proxy(ns, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown;
      if (prop !== "get" || typeof v !== "function") return typeof v === "function" ? v.bind(target) : v;
      return (...args: unknown[]) => countedStub(Reflect.apply(v as (...a: unknown[]) => object, target, args), name);
    },
  });
}

function countedStub(stub: object, name: string): object {
  return new Proxy(stub, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof prop !== "string" || typeof v !== "function") return v;
      return (...args: unknown[]) => {
        count(prop === "fetch" ? "do fetches" : "do rpc calls");
        count(`do ${name}.${prop}`);
        // Reflect.apply: an RPC stub's own `apply` would be a remote method of that name.
        return Reflect.apply(v as (...a: unknown[]) => unknown, target, args);
      };
    },
  });
}

/**
 * GET /__cost/counts (and reset with POST /__cost/reset), and POST /__cost/probe?op=…&n=…, which
 * does one kind of operation n times in one request, so the benchmark can read the host's CPU per
 * operation: `d1` (one trivial statement), `rpc` (a dispatcher call that does nothing),
 * `storage` (a dispatcher call that writes and deletes a paused flag: two storage statements and
 * the pump an unpause runs), `none` (the request alone). Operator only.
 */
async function costRoute(req: Request, url: URL, env: Bindings): Promise<Response> {
  const raw = bearer(req.headers.get("authorization") ?? undefined);
  if (!raw || !env.ADMIN_TOKEN || !(await secretEquals(raw, env.ADMIN_TOKEN))) return new Response("unauthorized", { status: 401 });
  if (url.pathname === "/__cost/counts") return Response.json(Object.fromEntries(counts));
  if (url.pathname === "/__cost/reset" && req.method === "POST") {
    counts.clear();
    return new Response(null, { status: 204 });
  }
  if (url.pathname === "/__cost/probe" && req.method === "POST") {
    const n = Math.min(10_000, Number(url.searchParams.get("n") ?? "100"));
    const op = url.searchParams.get("op");
    const stub = env.DISPATCHER.get(env.DISPATCHER.idFromName("shard-0"));
    for (let i = 0; i < n; i++) {
      if (op === "d1") await env.DB.prepare("select ?").bind(i).first();
      else if (op === "rpc") await stub.clearStorage("cost-probe");
      else if (op === "storage") {
        await stub.setPaused("cost-probe", true);
        await stub.setPaused("cost-probe", false);
      } else if (op !== "none") return new Response("unknown op", { status: 400 });
    }
    return new Response(null, { status: 204 });
  }
  return new Response("not found", { status: 404 });
}
