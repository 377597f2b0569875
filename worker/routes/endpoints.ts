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

// The specification lists no Content-Type for endpoint bodies and makes every field optional:
// the header may be omitted (but not contradicted) and so may the body.
const bodyRules = { contentType: "optional", emptyAs: {} } as const;

export const endpointRoutes = new Hono<AppEnv>()
  .get("/list", async (c) => c.json(await listEndpoints(c.var.db, c.var.caller.accountId, await listFilters(c, endpointListFilter))))
  .post("/:functionId", async (c) => {
    const input = await jsonBody(c, endpointCreate, bodyRules);
    return c.json({ id: await createEndpoint(c.var.db, c.var.caller.accountId, c.req.param("functionId"), input) }, 201);
  })
  .get("/:id", async (c) => c.json(await describeEndpoint(c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .get("/:id/metrics", async (c) => c.json(await endpointMetrics(c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .patch("/:id", async (c) => {
    const input = await jsonBody(c, endpointEdit, bodyRules);
    await editEndpoint(c.var.db, c.var.caller.accountId, c.req.param("id"), input);
    return c.body(null, 204);
  })
  .delete("/:id", async (c) => {
    await deleteEndpoint(c.var.db, c.var.caller.accountId, c.req.param("id"));
    return c.body(null, 204);
  });
