import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { platformMetrics } from "../services/platform-metrics.js";

/** GET /v1/metrics: the original service's platform metrics, for any account token. */
export const metricsRoutes = new Hono<AppEnv>().get("/", async (c) => c.json(await platformMetrics(c.var.db, c.env, c.var.caller.accountId)));
