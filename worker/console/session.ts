import type { Context } from "hono";
import { deleteCookie, getCookie, setCookie } from "hono/cookie";
import type { AppEnv } from "../env.js";
import { sha256Hex } from "../lib/ids.js";

/**
 * The console's session: the account token the person signed in with, in an HttpOnly,
 * SameSite=Strict cookie scoped to /console (Secure when served over https). The console does
 * everything through the API with that token, so it can do nothing the token's account cannot.
 */
export const SESSION_COOKIE = "gc_console";

export function sessionToken(c: Context<AppEnv>): string | undefined {
  return getCookie(c, SESSION_COOKIE) || undefined;
}

export function startSession(c: Context<AppEnv>, token: string): void {
  setCookie(c, SESSION_COOKIE, token, {
    path: "/console",
    httpOnly: true,
    secure: new URL(c.req.url).protocol === "https:",
    sameSite: "Strict",
    maxAge: 7 * 24 * 3600,
  });
}

export function endSession(c: Context<AppEnv>): void {
  deleteCookie(c, SESSION_COOKIE, { path: "/console", secure: new URL(c.req.url).protocol === "https:" });
}

/**
 * The CSRF token of a session: derived from the session's secret, so a page on another origin
 * can neither read nor forge it. Every change carries it (a form field or the X-CSRF-Token header).
 */
export async function csrfToken(sessionTokenValue: string): Promise<string> {
  return (await sha256Hex(`gcfaas-console-csrf:${sessionTokenValue}`)).slice(0, 32);
}

/**
 * A change is accepted only from the console's own pages: same origin (when the browser says so)
 * and the session's CSRF token. SameSite=Strict already keeps the cookie off cross-site requests;
 * this holds even where a browser or proxy does not honour it.
 */
export async function sameOriginChange(c: Context<AppEnv>, session: string, sentToken: string | undefined): Promise<boolean> {
  const origin = c.req.header("origin");
  if (origin && origin !== new URL(c.req.url).origin) return false;
  if (c.req.header("sec-fetch-site") === "cross-site") return false;
  return !!sentToken && sentToken === (await csrfToken(session));
}
