import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody, listFilters } from "../http/validate.js";
import { endpointCreate, endpointEdit, endpointListFilter } from "../../shared/schemas/endpoint.js";
import {
  createEndpoint,
  deleteEndpoint,
  describeEndpoint,
  editEndpoint,
  endpointMetrics,
  listEndpoints,
} from "../services/endpoints.js";
import { endpointsChanged, endpointsGone } from "../endpoint-door/notify.js";
import { describeRoute } from "../openapi/describe.js";
import * as out from "../../shared/schemas/responses.js";
import { created, json, listFilterBody, noContent } from "../openapi/parts.js";

// The specification lists no Content-Type for endpoint bodies and makes every field optional:
// the header may be omitted (but not contradicted) and so may the body.
const bodyRules = { contentType: "optional", emptyAs: {} } as const;

export const endpointRoutes = new Hono<AppEnv>()
  .get("/list", describeRoute({
    summary: "List public endpoints (paged)",
    group: "endpoints", auth: "account",
    query: endpointListFilter,
    body: listFilterBody(endpointListFilter),
    ok: { status: 200, schema: out.endpointList, description: "Pagination envelope." },
    errors: [400, 401, 404],
  }), async (c) => c.json(await listEndpoints(c.var.db, c.var.caller.accountId, await listFilters(c, endpointListFilter))))
  .post("/:functionId", describeRoute({
    summary: "Create a public endpoint for a function",
    group: "endpoints", auth: "account",
    body: { ...json(endpointCreate, false) },
    ok: created("endpoint"),
    errors: [400, 401, 404, 415],
  }), async (c) => {
    const input = await jsonBody(c, endpointCreate, bodyRules);
    return c.json({ id: await createEndpoint(c.var.db, c.var.caller.accountId, c.req.param("functionId"), input) }, 201);
  })
  .get("/:id", describeRoute({
    summary: "Get a public endpoint",
    group: "endpoints", auth: "account",
    ok: { status: 200, schema: out.endpointGet, description: "The endpoint." },
    errors: [401, 404],
  }), async (c) => c.json(await describeEndpoint(c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .get("/:id/metrics", describeRoute({
    summary: "Tasks through a public endpoint",
    group: "endpoints", auth: "account",
    ok: { status: 200, schema: out.endpointMetrics, description: "Today (UTC), pending, last 7 days." },
    errors: [401, 404],
  }), async (c) => c.json(await endpointMetrics(c.env, c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .patch("/:id", describeRoute({
    summary: "Edit a public endpoint",
    group: "endpoints", auth: "account",
    body: json(endpointEdit, false),
    ok: noContent,
    errors: [400, 401, 404, 415],
  }), async (c) => {
    const input = await jsonBody(c, endpointEdit, bodyRules);
    await editEndpoint(c.var.db, c.var.caller.accountId, c.req.param("id"), input);
    await endpointsChanged(c.env, [c.req.param("id")]);
    return c.body(null, 204);
  })
  .delete("/:id", describeRoute({ summary: "Delete a public endpoint", group: "endpoints", auth: "account", ok: noContent, errors: [401, 404] }), async (c) => {
    await deleteEndpoint(c.var.db, c.var.caller.accountId, c.req.param("id"));
    await endpointsGone(c.env, [c.req.param("id")]);
    return c.body(null, 204);
  });
