import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { platformMetrics } from "../services/platform-metrics.js";
import { describeRoute } from "../openapi/describe.js";
import * as out from "../../shared/schemas/responses.js";

/** GET /v1/metrics: the original service's platform metrics, for any account token. */
export const metricsRoutes = new Hono<AppEnv>().get("/", describeRoute({
  summary: "Platform metrics: the caller's pending, today's and completed tasks, pending builds, and the fleet's active, free and busy nodes",
  group: "invoices", auth: "account",
  ok: { status: 200, schema: out.platformMetrics, description: "Integers; tasks and builds are the caller's, nodes the fleet's." },
  errors: [401],
}), async (c) => c.json(await platformMetrics(c.var.db, c.env, c.var.caller.accountId)));
