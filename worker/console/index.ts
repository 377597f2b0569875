import { Hono, type Context } from "hono";
import type { AppEnv } from "../env.js";
import { lookupToken } from "../middleware/auth.js";
import { ConsoleApi, ConsoleError, type ApiFetch } from "./api.js";
import type { ConsoleEnv } from "./context.js";
import { csrfToken, endSession, sameOriginChange, sessionToken } from "./session.js";
import { errorBox, layout } from "./layout.js";
import { CONSOLE_JS } from "./assets.js";
import { registerSignIn } from "./pages/signin.js";
import { registerFunctions } from "./pages/functions.js";
import { registerFunction } from "./pages/function.js";
import { registerBuildsAndTasks } from "./pages/runs.js";
import { registerEndpoints } from "./pages/endpoints.js";
import { registerTriggers } from "./pages/triggers.js";
import { registerUsage } from "./pages/usage.js";
import { registerTags } from "./pages/tags.js";
import { registerSchedules } from "./pages/schedules.js";
import { registerRelease } from "./pages/release.js";

/** Pages may load their own script and style and show images of their own origin; nothing else. */
const CSP = "default-src 'none'; script-src 'self'; style-src 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/**
 * The web console, served by the Worker under /console: server-rendered pages (Hono's html
 * templates) over the same API the CLI uses, called in process with the session's token.
 */
export function consoleApp(apiFetch: ApiFetch) {
  const app = new Hono<ConsoleEnv>();

  app.use(async (c, next) => {
    await next();
    if (!c.res.headers.has("content-security-policy")) c.header("Content-Security-Policy", CSP);
    c.header("X-Content-Type-Options", "nosniff");
    c.header("Referrer-Policy", "same-origin");
    c.header("X-Frame-Options", "DENY");
    if (!c.res.headers.has("cache-control")) c.header("Cache-Control", "no-store");
  });

  app.get("/assets/console.js", (c) => c.body(CONSOLE_JS, 200, { "Content-Type": "text/javascript; charset=utf-8", "Cache-Control": "public, max-age=300" }));
  registerSignIn(app);

  // Everything else needs a session; every change needs the session's CSRF token and our origin.
  app.use(async (c, next) => {
    const token = sessionToken(c as never);
    const row = token ? await lookupToken(c as unknown as { var: AppEnv["Variables"] }, token, "user") : undefined;
    if (!token || !row?.accountId) {
      if (token) endSession(c as never);
      if (c.req.method === "GET") return c.redirect(`/console/signin?next=${encodeURIComponent(new URL(c.req.url).pathname)}`, 303);
      return c.text("sign in first", 401);
    }
    const csrf = await csrfToken(token);
    if (c.req.method !== "GET" && c.req.method !== "HEAD") {
      const sent = c.req.header("x-csrf-token") ?? (await formToken(c));
      if (!(await sameOriginChange(c as never, token, sent))) return c.text("refused: this change did not come from the console's own pages", 403);
    }
    c.set("api", new ConsoleApi(apiFetch, c as never, token));
    c.set("accountId", row.accountId);
    c.set("page", { csrf });
    await next();
  });

  registerFunctions(app);
  registerFunction(app);
  registerRelease(app);
  registerBuildsAndTasks(app);
  registerEndpoints(app);
  registerTriggers(app);
  registerSchedules(app);
  registerUsage(app);
  registerTags(app);

  app.onError((err, c) => {
    if (err instanceof ConsoleError) {
      const page = c.var.page ?? { csrf: "" };
      return c.html(layout("Not available", page, errorBox(err.error)), err.status as 400);
    }
    throw err;
  });
  return app;
}

/**
 * The `_csrf` field of a urlencoded or multipart form; other bodies (a zip) carry the header
 * instead and are not read here. Hono keeps the parsed form for the handler.
 */
async function formToken(c: Context<ConsoleEnv>): Promise<string | undefined> {
  const type = c.req.header("content-type") ?? "";
  if (!/^(application\/x-www-form-urlencoded|multipart\/form-data)/i.test(type)) return undefined;
  const v = (await c.req.parseBody({ all: true }))._csrf;
  return typeof v === "string" ? v : undefined;
}
