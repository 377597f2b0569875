import type { Context, Hono } from "hono";
import type { AppEnv } from "../env.js";
import { ApiError } from "../errors.js";

/**
 * The not-found handler: a path that some route serves under another method answers 405 with
 * `Allow`; anything else 404. Patterns are compiled once, on the first miss.
 */
export function methodNotAllowed(app: Hono<AppEnv>) {
  let table: { method: string; re: RegExp }[] | undefined;
  return (c: Context<AppEnv>) => {
    table ??= app.routes
      .filter((r) => r.method !== "ALL")
      .map((r) => ({
        method: r.method,
        re: new RegExp(`^${r.path.replace(/[.+?^${}()|[\]\\]/g, "\\$&").replace(/\/:[^/]+/g, "/[^/]+").replace(/\*/g, ".*")}$`),
      }));
    const allowed = [...new Set(table.filter((r) => r.re.test(c.req.path)).map((r) => r.method))];
    if (allowed.length) throw new ApiError("method_not_allowed", `${c.req.method} is not allowed here; use ${allowed.join(", ")}`, undefined, { Allow: allowed.join(", ") });
    throw new ApiError("not_found", `no route for ${c.req.method} ${c.req.path}`);
  };
}
