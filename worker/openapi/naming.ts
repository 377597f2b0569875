/**
 * Names the OpenAPI document gives what the routes leave implicit: one parameter name per path
 * position, and an operationId per operation. Derived from method and path by rule, so that a
 * route added later is named without another list to keep; a test and Redocly's lint hold the
 * result unique.
 */

const PARAM = /^[:{](\w+)\}?$/;

interface Segment {
  literal?: string;
  param?: string;
}

function segments(path: string): Segment[] {
  return path
    .split("/")
    .filter(Boolean)
    .map((s) => {
      const m = PARAM.exec(s);
      return m ? { param: m[1] } : { literal: s };
    });
}

/** The path up to and including segment i, with every parameter written `{}`. */
function shapeUpTo(segs: Segment[], i: number): string {
  return segs
    .slice(0, i + 1)
    .map((s) => (s.param ? "{}" : s.literal))
    .join("/");
}

/**
 * Hono may name the same position differently on two routes (`/v1/build/:functionId` to create,
 * `/v1/build/:id` to read); generators and gateways take such paths for one. The document uses
 * one name per position: `id` where any route says `id`, else the first name in sort order.
 */
export function parameterNames(paths: string[]): Map<string, string> {
  const seen = new Map<string, Set<string>>();
  for (const p of paths) {
    const segs = segments(p);
    segs.forEach((s, i) => {
      if (!s.param) return;
      const shape = shapeUpTo(segs, i);
      seen.set(shape, (seen.get(shape) ?? new Set()).add(s.param));
    });
  }
  const chosen = new Map<string, string>();
  for (const [shape, names] of seen) chosen.set(shape, names.has("id") ? "id" : [...names].sort()[0]!);
  return chosen;
}

export interface DocumentedPath {
  /** OpenAPI template, e.g. `/v1/build/{id}`. */
  template: string;
  /** Each document parameter with what the route calls it. */
  params: { name: string; routeName: string; description: string }[];
}

/** A path segment as one record of it: `/v1/scheduled/{id}` is a schedule. */
const NOUN: Record<string, string> = { scheduled: "schedule", gc: "public endpoint", secrets: "secret", accounts: "account", nodes: "node", tokens: "token", "agent-tokens": "agent-token", builds: "build", tasks: "task" };
const noun = (segment: string) => NOUN[segment] ?? segment;

/** What a parameter holds, from the name the route gives it (`functionId`) or the segment before it. */
function describe(routeName: string, before: string | undefined): string {
  if (routeName === "setBy") return "The id of the task that stored the value.";
  if (routeName.endsWith("Id")) return `The ${routeName.slice(0, -2).replace(/[A-Z]/g, (c) => ` ${c.toLowerCase()}`)}'s id.`;
  const owner = noun(before ?? "record");
  return routeName === "id" ? `The ${owner}'s id.` : `The ${owner}'s ${routeName}.`;
}

export function documentedPath(honoPath: string, names: Map<string, string>): DocumentedPath {
  const segs = segments(honoPath);
  const params: DocumentedPath["params"] = [];
  const parts = segs.map((s, i) => {
    if (!s.param) return s.literal!;
    const name = names.get(shapeUpTo(segs, i)) ?? s.param;
    params.push({ name, routeName: s.param, description: describe(s.param, segs[i - 1]?.literal) });
    return `{${name}}`;
  });
  return { template: `/${parts.join("/")}`, params };
}

/** Operations whose rule-made name would mislead. Keyed `method path` (Hono syntax). */
const OPERATION_ID_OVERRIDES: Record<string, string> = {
  "get /healthz": "getHealth",
  "get /v1/openapi.json": "getOpenApiDocument",
  "post /v1/billing/webhook": "receiveBillingWebhook",
  "options /gc/:id": "preflightPublicEndpoint",
  "get /gc/:taskId/result": "getPublicTaskResult",
  "delete /v1/admin/tokens/:tokenId": "revokeToken",
  "get /v1/admin/nodes": "listNodes",
  "get /v1/agent/connect": "connectAgent",
  "post /v1/function/:id/capabilities": "setFunctionCapabilities",
  "post /v1/function/:id/togglePause": "toggleFunctionPause",
  "post /v1/function/:id/rollback": "rollbackFunctionRelease",
  "get /v1/function/:id/secrets": "listFunctionSecrets",
  "post /v1/scheduled/:id/try": "trySchedule",
};

/** Path segments that name an action, not a resource: `POST …/drain` drains. */
const ACTIONS = new Set(["drain", "resume", "disable"]);
/** Segments that only group routes and would lengthen every name. */
const SILENT = new Set(["v1", "admin"]);
const VERB: Record<string, string> = { get: "get", post: "create", put: "set", patch: "update", delete: "delete", options: "preflight" };

const pascal = (s: string) => s.replace(/(^|[-_. ])(\w)/g, (_, __, c: string) => c.toUpperCase());

/**
 * `createTask`, `getTaskResult`, `listFunctions`: the verb from the method (or the action the path
 * ends with), then the resources the path names, each as one record where an id follows it (and
 * the one a create makes).
 */
export function operationId(method: string, honoPath: string, callMethod = method): string {
  const override = OPERATION_ID_OVERRIDES[`${method} ${honoPath}`];
  if (override) return override;
  // One route answers every method of a public endpoint's call; each method is its own operation.
  if (method === "all") return `callPublicEndpointWith${pascal(callMethod)}`;
  const segs = segments(honoPath).filter((s) => !s.literal || !SILENT.has(s.literal));
  const words = segs.flatMap((s, i) => (s.literal ? [{ word: s.literal, one: !!segs[i + 1]?.param }] : []));
  let verb = VERB[method] ?? method;
  const last = words.at(-1)?.word;
  if (last === "list" || (last && ACTIONS.has(last))) {
    verb = last;
    words.pop();
  }
  if (method === "post" && verb === "create") words.at(-1)!.one = true;
  const name = words.map((w) => pascal(w.one || verb === "list" ? noun(w.word) : w.word)).join("");
  return verb === "list" ? `${verb}${name}s` : `${verb}${name}`;
}
