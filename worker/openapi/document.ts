import { z } from "zod";
import { errorBody } from "../../shared/schemas/responses.js";
import { ERROR_STATUS } from "../errors.js";
import { documentedPath, operationId, parameterNames, type DocumentedPath } from "./naming.js";
import { documentedOperations, type Operation } from "./describe.js";
import { withEventStreams } from "./event-streams.js";

const toSchema = (s: z.ZodType) => z.toJSONSchema(s, { io: "input", unrepresentable: "any", target: "draft-2020-12" }) as Record<string, unknown>;

const SECURITY: Record<Operation["auth"], Record<string, string[]>[] | undefined> = {
  account: [{ account: [] }],
  admin: [{ admin: [] }],
  agent: [{ agent: [] }],
  optional: [{}, { account: [] }],
  none: [],
};

function codesFor(status: number): string[] {
  return Object.entries(ERROR_STATUS).filter(([, s]) => s === status).map(([c]) => c);
}

function queryParameters(schema: z.ZodType | undefined) {
  if (!schema) return [];
  const js = toSchema(schema) as { properties?: Record<string, unknown>; required?: string[] };
  return Object.entries(js.properties ?? {}).map(([name, s]) => ({ name, in: "query", required: js.required?.includes(name) ?? false, schema: s }));
}

/** The Worker's own answers name their request (hono's requestId middleware, app.ts): quote it when reporting a problem. */
const REQUEST_ID = { "X-Request-Id": { $ref: "#/components/headers/RequestId" } };

/** The operations that touch no storage, and so never answer storage_unavailable. */
const STORAGE_FREE = new Set(["/healthz", "/v1/openapi.json"]);

function operationObject(op: Operation, path: DocumentedPath, method: string) {
  const pathParams = path.params.map((p) => ({ name: p.name, in: "path", required: true, description: p.description, schema: { type: "string" } }));
  const responses: Record<string, unknown> = {};
  for (const ok of [op.ok, ...(op.also ?? [])])
    responses[ok.status] = {
      description: ok.description,
      headers: {
        ...REQUEST_ID,
        ...Object.fromEntries(Object.entries(ok.headers ?? {}).map(([name, description]) => [name, { description, required: true, schema: { type: "string" } }])),
        ...Object.fromEntries(Object.entries(ok.optionalHeaders ?? {}).map(([name, description]) => [name, { description, required: false, schema: { type: "string" } }])),
      },
      ...(ok.schema || ok.contentType ? { content: { [ok.contentType ?? "application/json"]: ok.schema ? { schema: toSchema(ok.schema) } : {} } } : {}),
    };
  // Every request is held to its route's body limit (middleware/body-limit.ts) before the route
  // runs: a declared Content-Length over it answers 413 even on a GET.
  // Every operation that reads or writes the database answers 503 storage_unavailable (with
  // Retry-After) when D1 cannot be reached (app.ts, db/unavailable.ts).
  const errors = [...new Set([...op.errors, 413, ...(STORAGE_FREE.has(op.path) ? [] : [503])])].sort((a, b) => a - b);
  for (const status of errors)
    responses[status] = { description: `Error: ${codesFor(status).join(", ") || "see message"}`, headers: REQUEST_ID, content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } };
  return {
    summary: op.summary,
    tags: [op.group],
    operationId: operationId(op.method, op.path, method),
    security: SECURITY[op.auth],
    parameters: [...pathParams, ...queryParameters(op.query), ...(op.headers ?? []).map((h) => ({ name: h.name, in: "header", required: false, description: h.description, schema: toSchema(h.schema) }))],
    ...(op.body
      ? { requestBody: { required: op.body.required, description: op.body.description, content: Object.fromEntries([op.body.contentType, ...(op.body.otherContentTypes ?? [])].map((t) => [t, op.body?.schema ? { schema: toSchema(op.body.schema) } : {}])) } }
      : {}),
    responses,
  };
}

type App = Parameters<typeof documentedOperations>[0];

/** OpenAPI 3.1 from the app's documented routes (describeRoute) and the zod schemas that validate requests. */
export function openApiDocument(app: App, serverUrl?: string) {
  const ops = documentedOperations(app);
  const paths: Record<string, Record<string, unknown>> = {};
  const names = parameterNames(ops.map((op) => op.path));
  for (const op of ops) {
    const path = documentedPath(op.path, names);
    const methods = op.method === "all" ? ["get", "post", "put", "patch", "delete"] : [op.method];
    for (const m of methods) (paths[path.template] ??= {})[m] = operationObject(op, path, m);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "gcfaas",
      version: "1",
      // The project has not chosen a license; this says so rather than inventing one.
      license: { name: "UNLICENSED (proprietary; no license granted)" },
      description: "Function-execution service: functions, builds, tasks, triggers, public endpoints, tags and invoices.",
    },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    paths: withEventStreams(paths, ops),
    components: {
      schemas: { Error: toSchema(errorBody) },
      // Not on a replayed result: that answer is built whole by the result service, past the middleware's reach.
      headers: { RequestId: { description: "The request's id, also in the Worker's log lines (every answer but a replayed result carries it).", schema: { type: "string" } } },
      securitySchemes: {
        account: { type: "http", scheme: "bearer", description: "An account token (a bare token without 'Bearer' is accepted too)." },
        admin: { type: "http", scheme: "bearer", description: "The operator secret ADMIN_TOKEN." },
        agent: { type: "http", scheme: "bearer", description: "An agent token minted by POST /v1/admin/agent-tokens." },
      },
    },
  };
}
