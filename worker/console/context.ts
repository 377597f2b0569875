import type { Context, Hono } from "hono";
import type { Bindings, Variables } from "../env.js";
import type { ConsoleApi } from "./api.js";
import type { PageContext } from "./layout.js";

export interface ConsoleVariables extends Variables {
  api: ConsoleApi;
  page: PageContext;
  accountId: string;
}

export type ConsoleEnv = { Bindings: Bindings; Variables: ConsoleVariables };
export type ConsoleContext = Context<ConsoleEnv>;
export type ConsoleApp = Hono<ConsoleEnv>;

/** A form's fields as strings (repeated fields joined into arrays by `all`). */
export async function formOf(c: ConsoleContext): Promise<{ get(name: string): string; all(name: string): string[] }> {
  const body = await c.req.parseBody({ all: true });
  const value = (name: string) => body[name];
  return {
    get: (name) => {
      const v = value(name);
      return typeof v === "string" ? v : Array.isArray(v) && typeof v[0] === "string" ? v[0] : "";
    },
    all: (name) => {
      const v = value(name);
      return (Array.isArray(v) ? v : v === undefined ? [] : [v]).filter((x): x is string => typeof x === "string");
    },
  };
}

/** Redirect after a successful change (POST → GET), with a short message in the query. */
export const seeOther = (c: ConsoleContext, path: string, message?: string) =>
  c.redirect(message ? `${path}${path.includes("?") ? "&" : "?"}done=${encodeURIComponent(message)}` : path, 303);
