import { createMiddleware } from "hono/factory";
import { and, eq, isNull } from "drizzle-orm";
import type { AppEnv } from "../env.js";
import { TOKEN_CACHE_MS } from "../lib/token-cache.js";
import { isStorageUnavailable } from "../db/unavailable.js";
import { ApiError } from "../errors.js";
import { tokens } from "../db/schema.js";
import { secretEquals, sha256Hex } from "../lib/ids.js";

/** `Authorization: Bearer <token>`, or the bare token. */
export function bearer(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^\s*(?:Bearer\s+)?(\S+)\s*$/i.exec(header);
  return m?.[1];
}

type TokenRow = { id: string; accountId: string | null; nodeId: string | null };

/**
 * Valid tokens seen by this isolate in the last TOKEN_CACHE_MS: every authenticated request would
 * otherwise cost a D1 round trip before any work. A revocation takes effect at once in the isolate
 * that revokes and within TOKEN_CACHE_MS everywhere else; unknown tokens are never cached.
 */
const TOKEN_CACHE_MAX = 10_000;
/** How long past its TOKEN_CACHE_MS a valid token still opens routes while D1 cannot be reached. */
const STALE_TOKEN_MS = 15 * 60_000;
const tokenCache = new Map<string, { row: TokenRow; until: number }>();

export function forgetToken(tokenId: string) {
  for (const [key, v] of tokenCache) if (v.row.id === tokenId) tokenCache.delete(key);
}

export async function lookupToken(c: { var: AppEnv["Variables"] }, raw: string, kind: "user" | "agent"): Promise<TokenRow | undefined> {
  // Keyed by the token itself, which this isolate holds anyway while serving the request: hashing
  // it on every request cost more than the rest of the authentication.
  const key = `${kind}:${raw}`;
  const now = Date.now();
  const hit = tokenCache.get(key);
  if (hit && hit.until > now) return hit.row;
  const hash = await sha256Hex(raw);
  let row: TokenRow | undefined;
  try {
    [row] = await c.var.db
      .select({ id: tokens.id, accountId: tokens.accountId, nodeId: tokens.nodeId })
      .from(tokens)
      .where(and(eq(tokens.hash, hash), eq(tokens.kind, kind), isNull(tokens.revokedAt)))
      .limit(1);
  } catch (e) {
    // D1 unreachable: a token this isolate saw valid lately still opens the routes that need no D1
    // (task creation and reads answer from the shards), so calls keep answering through an outage.
    // Nothing can be revoked meanwhile (a revocation is a D1 write).
    if (hit && now - hit.until < STALE_TOKEN_MS && isStorageUnavailable(e)) return hit.row;
    throw e;
  }
  if (row) {
    if (tokenCache.size >= TOKEN_CACHE_MAX) tokenCache.delete(tokenCache.keys().next().value!);
    tokenCache.set(key, { row, until: now + TOKEN_CACHE_MS });
  } else tokenCache.delete(key);
  return row;
}

const unauthorized = () => new ApiError("unauthorized", "a valid access token is required in the Authorization header");

/** Account tokens: every /v1 record route. */
export const requireAccount = createMiddleware<AppEnv>(async (c, next) => {
  const raw = bearer(c.req.header("authorization"));
  const row = raw ? await lookupToken(c, raw, "user") : undefined;
  if (!row?.accountId) throw unauthorized();
  c.set("caller", { accountId: row.accountId, tokenId: row.id });
  await next();
});

/**
 * Agent tokens: the /v1/agent routes compute hosts use, and nothing else. A token speaks for the
 * node it was minted for; tokens from before that binding existed speak for none and are refused.
 */
export const requireAgent = createMiddleware<AppEnv>(async (c, next) => {
  const raw = bearer(c.req.header("authorization"));
  const row = raw ? await lookupToken(c, raw, "agent") : undefined;
  if (!row) throw unauthorized();
  if (!row.nodeId) throw new ApiError("unauthorized", "this agent token is bound to no node; mint one with POST /v1/admin/agent-tokens {\"nodeId\": \"…\"} and restart the agent with it");
  c.set("agent", { nodeId: row.nodeId, tokenId: row.id });
  await next();
});

/** The operator secret ADMIN_TOKEN: /v1/admin routes. Unset means admin routes are closed. */
export const requireAdmin = createMiddleware<AppEnv>(async (c, next) => {
  const raw = bearer(c.req.header("authorization"));
  if (!raw || !c.env.ADMIN_TOKEN || !(await secretEquals(raw, c.env.ADMIN_TOKEN))) throw unauthorized();
  await next();
});

/** Resolves an optional account token (public result reads after their anonymous window). */
export async function optionalAccount(c: { var: AppEnv["Variables"]; req: { header(n: string): string | undefined } }) {
  const raw = bearer(c.req.header("authorization"));
  if (!raw) return undefined;
  const row = await lookupToken(c, raw, "user");
  if (!row?.accountId) throw unauthorized();
  return row.accountId;
}
