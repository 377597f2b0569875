import { z } from "zod";
import { errorBody } from "../../shared/schemas/responses.js";
import { ERROR_STATUS } from "../errors.js";
import { OPERATIONS, type Operation } from "./operations.js";
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

function operationObject(op: Operation) {
  const pathParams = [...op.path.matchAll(/:(\w+)/g)].map((m) => ({ name: m[1], in: "path", required: true, schema: { type: "string" } }));
  const responses: Record<string, unknown> = {
    [op.ok.status]: {
      description: op.ok.description,
      ...(op.ok.schema || op.ok.contentType ? { content: { [op.ok.contentType ?? "application/json"]: op.ok.schema ? { schema: toSchema(op.ok.schema) } : {} } } : {}),
    },
  };
  // Every body is held to its route's limit (middleware/body-limit.ts), whatever the route does.
  const errors = op.body && !op.errors.includes(413) ? [...op.errors, 413].sort((a, b) => a - b) : op.errors;
  for (const status of errors)
    responses[status] = { description: `Error: ${codesFor(status).join(", ") || "see message"}`, content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } };
  return {
    summary: op.summary,
    tags: [op.group],
    operationId: `${op.method}${op.path.replace(/[/:{}]+(\w)/g, (_, c: string) => c.toUpperCase())}`,
    security: SECURITY[op.auth],
    parameters: [...pathParams, ...queryParameters(op.query)],
    ...(op.body
      ? { requestBody: { required: op.body.required, description: op.body.description, content: { [op.body.contentType]: op.body.schema ? { schema: toSchema(op.body.schema) } : {} } } }
      : {}),
    responses,
  };
}

/** OpenAPI 3.1 from the operations table and the zod schemas that validate requests. */
export function openApiDocument(serverUrl?: string) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of OPERATIONS) {
    const p = op.path.replace(/:(\w+)/g, "{$1}");
    const methods = op.method === "all" ? ["get", "post", "put", "patch", "delete"] : [op.method];
    for (const m of methods) (paths[p] ??= {})[m] = operationObject(op);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "gcfaas",
      version: "1",
      description: "Function-execution service: functions, builds, tasks, triggers, public endpoints, tags and invoices.",
    },
    ...(serverUrl ? { servers: [{ url: serverUrl }] } : {}),
    paths: withEventStreams(paths),
    components: {
      schemas: { Error: toSchema(errorBody) },
      securitySchemes: {
        account: { type: "http", scheme: "bearer", description: "An account token (a bare token without 'Bearer' is accepted too)." },
        admin: { type: "http", scheme: "bearer", description: "The operator secret ADMIN_TOKEN." },
        agent: { type: "http", scheme: "bearer", description: "An agent token minted by POST /v1/admin/agent-tokens." },
      },
    },
  };
}
