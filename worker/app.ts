import { Hono } from "hono";
import { requestId } from "hono/request-id";
import type { AppEnv } from "./env.js";
import { ApiError } from "./errors.js";
import { openDb } from "./db/client.js";
import { isStorageUnavailable, storageUnavailable } from "./db/unavailable.js";
import { openApiDocument } from "./openapi/document.js";
import { requireAccount, requireAdmin, requireAgent } from "./middleware/auth.js";
import { methodNotAllowed } from "./middleware/method-not-allowed.js";
import { drainBody } from "./middleware/drain-body.js";
import { bodyLimit } from "./middleware/body-limit.js";
import { withoutTrailingSlash } from "./http/path.js";
import { consoleApp } from "./console/index.js";
import { prefersHtml } from "./public/pages.js";
import { adminRoutes } from "./routes/admin.js";
import { billingWebhookRoutes, usageRoutes } from "./routes/billing.js";
import { agentRoutes } from "./routes/agent.js";
import { publicRoutes } from "./routes/public.js";
import { buildRoutes } from "./routes/builds.js";
import { endpointRoutes } from "./routes/endpoints.js";
import { functionRoutes } from "./routes/functions.js";
import { functionConfigRoutes } from "./routes/function-config.js";
import { invoiceRoutes } from "./routes/invoices.js";
import { metricsRoutes } from "./routes/metrics.js";
import { tagRoutes } from "./routes/tags.js";
import { taskRoutes } from "./routes/tasks.js";
import { triggerRoutes } from "./routes/triggers.js";
import { scheduledRoutes } from "./routes/scheduled.js";
import { releaseRoutes } from "./releases/routes.js";
import { networkRoutes } from "./egress/routes.js";
import { retryRoutes } from "./retries/routes.js";
import { concurrencyRoutes } from "./concurrency/routes.js";
import { describeRoute } from "./openapi/describe.js";

export function createApp() {
  // `/gc/<id>/?email=…` is what real clients send: every path matches with or without one
  // trailing slash, without a redirect (a redirected POST would lose its body).
  const app = new Hono<AppEnv>({ getPath: withoutTrailingSlash });

  app.use(drainBody);
  app.use(requestId());
  app.use(bodyLimit);
  app.use(async (c, next) => {
    c.set("db", openDb(c.env));
    await next();
  });

  // Liveness for load balancers and the bare baseline of the benchmarks: no auth, no storage.
  app.get("/healthz", describeRoute({
    summary: "Liveness",
    group: "meta", auth: "none",
    ok: { status: 200, description: "ok", contentType: "text/plain" },
    errors: [],
  }), (c) => c.text("ok"));
  app.get("/v1/openapi.json", describeRoute({
    summary: "This document",
    group: "meta", auth: "none",
    ok: { status: 200, description: "OpenAPI 3.1", contentType: "application/json" },
    errors: [],
  }), (c) => c.json(openApiDocument(app, new URL(c.req.url).origin)));

  app.route("/v1/billing", billingWebhookRoutes);

  app.use("/v1/admin/*", requireAdmin);
  app.route("/v1/admin", adminRoutes);
  app.use("/v1/agent/*", requireAgent);
  app.route("/v1/agent", agentRoutes);

  const v1 = new Hono<AppEnv>();
  v1.use(requireAccount);
  v1.route("/function", functionRoutes);
  v1.route("/function", releaseRoutes);
  v1.route("/function", retryRoutes);
  v1.route("/function", concurrencyRoutes);
  v1.route("/function", functionConfigRoutes);
  v1.route("/function", networkRoutes);
  v1.route("/tag", tagRoutes);
  v1.route("/trigger", triggerRoutes);
  v1.route("/scheduled", scheduledRoutes);
  v1.route("/endpoint", endpointRoutes);
  v1.route("/build", buildRoutes);
  v1.route("/task", taskRoutes);
  v1.route("/invoice", invoiceRoutes);
  v1.route("/usage", usageRoutes);
  v1.route("/metrics", metricsRoutes);
  app.route("/v1", v1);
  app.route("/gc", publicRoutes);
  // The console calls the API above in process, with the session's token.
  app.route("/console", consoleApp((request, env, ctx) => app.fetch(request, env, ctx)));
  app.get("/", (c) => {
    if (prefersHtml(c)) return c.redirect("/console", 302);
    throw new ApiError("not_found", "nothing here: the API is under /v1 (see /v1/openapi.json), the console under /console");
  });

  app.notFound(methodNotAllowed(app));
  app.onError((thrown, c) => {
    // D1 unreachable (an outage, or a test's failure window): a 503 the client may retry, not a 500.
    const err = isStorageUnavailable(thrown) ? storageUnavailable() : thrown;
    if (err instanceof ApiError) {
      if (err.code === "storage_unavailable") console.warn(JSON.stringify({ level: "warn", requestId: c.var.requestId, path: c.req.path, msg: "D1 unreachable", error: String(thrown) }));
      for (const [k, v] of Object.entries(err.headers ?? {})) c.header(k, v);
      return c.json(err.body(), err.status);
    }
    console.error(JSON.stringify({ level: "error", requestId: c.var.requestId, path: c.req.path, error: String(err), stack: (err as Error).stack }));
    return c.json(new ApiError("internal_error", "an internal error occurred; it has been logged").body(), 500);
  });
  return app;
}
