import type { MiddlewareHandler } from "hono";
import { findTargetHandler } from "hono/utils/handler";
import type { z } from "zod";

type Method = "get" | "post" | "patch" | "put" | "delete" | "options" | "all";

/** What the document says about one route; method and path come from the route it is attached to. */
export interface RouteDoc {
  summary: string;
  group: string;
  auth: "account" | "admin" | "agent" | "none" | "optional";
  query?: z.ZodType;
  /** Request headers the operation reads, beyond authorization. */
  headers?: HeaderParameter[];
  body?: { schema?: z.ZodType; contentType: string; required: boolean; description?: string; otherContentTypes?: string[] };
  ok: Answer;
  /** Other answers that are not errors (a result read before the task finished). */
  also?: Answer[];
  errors: number[];
  /** The Server-Sent Events the success answer may stream instead (docs/logs.md; event-streams.ts). */
  events?: string;
}

export interface Answer {
  status: number;
  schema?: z.ZodType;
  description: string;
  contentType?: string;
  headers?: Record<string, string>;
  optionalHeaders?: Record<string, string>;
}

export interface HeaderParameter {
  name: string;
  description: string;
  schema: z.ZodType;
}

/** A documented route: what it says, and where the app serves it. */
export interface Operation extends RouteDoc {
  method: Method;
  /** Hono path syntax (`:id`); the document turns it into `{id}`. */
  path: string;
}

const DOC = Symbol("openapi");
type Described = MiddlewareHandler & { [DOC]?: RouteDoc };

/**
 * The documentation of a route, placed in the route's own declaration before its handler:
 * `.post("/", describeRoute({ summary, ... }), handler)`. A middleware that only passes on; the
 * document finds it among the app's routes (documentedOperations), so method and path are the
 * route's own and no list of routes is kept beside them.
 */
export function describeRoute(doc: RouteDoc): MiddlewareHandler {
  const passOn: Described = async (_c, next) => {
    await next();
  };
  passOn[DOC] = doc;
  return passOn;
}

/** The app's documented routes in registration order, each with its full path (sub-apps mounted). */
export function documentedOperations(app: { routes: { method: string; path: string; handler: unknown }[] }): Operation[] {
  const ops: Operation[] = [];
  for (const r of app.routes) {
    // app.route() wraps a sub-app's handlers; the original, with its documentation, is inside.
    const doc = (findTargetHandler(r.handler as MiddlewareHandler) as Described)[DOC];
    if (doc) ops.push({ ...doc, method: r.method.toLowerCase() as Method, path: r.path });
  }
  return ops;
}
