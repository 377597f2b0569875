import { and, eq, isNull } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { accounts, tokens } from "../db/schema.js";
import { notFound, validationFailed } from "../errors.js";
import type { Plan } from "../billing/plans.js";
import { newId, newToken, sha256Hex } from "../lib/ids.js";
import { forgetToken } from "../middleware/auth.js";
import { iso } from "../lib/time.js";
import type { StoreBindings } from "../bindings.js";
import { effectiveLimits, limitDefaults } from "../limits/account-limits.js";

async function mint(db: Db, kind: "user" | "agent", accountId: string | null, name: string | null, nodeId: string | null = null) {
  const token = newToken(kind);
  const id = newId();
  await db.insert(tokens).values({ id, accountId, kind, name, nodeId, hash: await sha256Hex(token), createdAt: Date.now() });
  return { tokenId: id, token };
}

export async function createAccount(db: Db, name: string) {
  const accountId = newId();
  const token = newToken("user");
  const tokenId = newId();
  const now = Date.now();
  await db.batch([
    db.insert(accounts).values({ id: accountId, name, createdAt: now }),
    db.insert(tokens).values({ id: tokenId, accountId, kind: "user", name: null, hash: await sha256Hex(token), createdAt: now }),
  ]);
  return { accountId, tokenId, token };
}

export async function mintAccountToken(db: Db, accountId: string) {
  const [acct] = await db.select({ id: accounts.id }).from(accounts).where(eq(accounts.id, accountId));
  if (!acct) throw notFound("account");
  return mint(db, "user", accountId, null);
}

/**
 * Several tokens may speak for one node (to rotate one without downtime: mint, restart the agent
 * with the new one, revoke the old); none speaks for two.
 */
export async function mintAgentToken(db: Db, nodeId: string, name: string | undefined) {
  return { ...(await mint(db, "agent", null, name ?? null, nodeId)), nodeId };
}

/** Revokes a token; the caller closes what a revoked agent token still holds open. */
export async function revokeToken(db: Db, tokenId: string): Promise<{ kind: "user" | "agent" }> {
  const [res] = await db
    .update(tokens)
    .set({ revokedAt: Date.now() })
    .where(and(eq(tokens.id, tokenId), isNull(tokens.revokedAt)))
    .returning({ kind: tokens.kind });
  if (!res) throw notFound("token");
  forgetToken(tokenId);
  return res;
}

/** Moves an account to another configured plan (it applies to the current period's quota at once). */
export async function setPlan(db: Db, plans: Plan[], accountId: string, plan: string) {
  if (!plans.some((p) => p.id === plan)) throw validationFailed([{ field: "plan", message: `no plan ${plan}; configured: ${plans.map((p) => p.id).join(", ")}` }]);
  const res = await db.update(accounts).set({ plan }).where(eq(accounts.id, accountId)).returning({ id: accounts.id });
  if (!res.length) throw notFound("account");
}

/** The operator's view of an account: its plan and the limits that apply to it now (defaults included). */
export async function describeAccount(env: Pick<StoreBindings, "ACCOUNT_LIMITS">, db: Db, accountId: string) {
  const [a] = await db.select().from(accounts).where(eq(accounts.id, accountId));
  if (!a) throw notFound("account");
  return { id: a.id, name: a.name, plan: a.plan, privileged: a.privileged, egress: a.egress, createdAt: iso(a.createdAt)!, limits: effectiveLimits(limitDefaults(env), a.limits) };
}
