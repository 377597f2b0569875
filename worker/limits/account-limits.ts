import { eq, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { accounts } from "../db/schema.js";
import { ApiError, notFound } from "../errors.js";
import type { StoreBindings } from "../bindings.js";
import {
  accountLimitsPartial,
  BUILT_IN_ACCOUNT_LIMITS,
  type AccountLimitName,
  type AccountLimits,
  type AccountLimitsPatch,
} from "../../shared/schemas/limits.js";

/**
 * The operator's defaults: the built-in values, each overridable by the ACCOUNT_LIMITS variable (a
 * JSON object with any of the limit names). A malformed variable is a deploy mistake: the built-in
 * values apply and the log says why, rather than every request failing.
 */
export function limitDefaults(env: Pick<StoreBindings, "ACCOUNT_LIMITS">): AccountLimits {
  if (!env.ACCOUNT_LIMITS) return BUILT_IN_ACCOUNT_LIMITS;
  let parsed: unknown;
  try {
    parsed = JSON.parse(env.ACCOUNT_LIMITS);
  } catch {
    parsed = undefined;
  }
  const given = accountLimitsPartial.safeParse(parsed);
  if (given.success) return { ...BUILT_IN_ACCOUNT_LIMITS, ...given.data };
  console.error(JSON.stringify({ level: "error", message: "ACCOUNT_LIMITS is not a valid object of limits; the built-in defaults apply", value: env.ACCOUNT_LIMITS }));
  return BUILT_IN_ACCOUNT_LIMITS;
}

/** The limits that apply: the account's own values over the defaults (a stored value that no longer parses is ignored). */
export function effectiveLimits(defaults: AccountLimits, own: unknown): AccountLimits {
  const parsed = accountLimitsPartial.safeParse(own ?? {});
  return parsed.success ? { ...defaults, ...parsed.data } : defaults;
}

/** One account's limits now; an unknown account gets the defaults (callers have checked it exists). */
export async function limitsOf(env: Pick<StoreBindings, "ACCOUNT_LIMITS">, db: Db, accountId: string): Promise<AccountLimits> {
  const [row] = await db.select({ limits: accounts.limits }).from(accounts).where(eq(accounts.id, accountId));
  return effectiveLimits(limitDefaults(env), row?.limits);
}

/** The account's own value of one limit, for a statement that reads it in the same round trip. */
export const ownLimitColumn = (name: AccountLimitName, accountIdColumn: unknown) =>
  sql<number | null>`(select json_extract(a.limits, ${"$." + name}) from accounts a where a.id = ${accountIdColumn})`;

/**
 * Merges a PATCH's limits into the account's own values in one statement (a JSON merge patch:
 * `null` removes a value, so the default applies again); concurrent PATCHes of different limits
 * both stick.
 */
export async function setLimits(db: Db, accountId: string, patch: AccountLimitsPatch): Promise<void> {
  const res = await db
    .update(accounts)
    .set({ limits: sql`json_patch(coalesce(${accounts.limits}, '{}'), ${JSON.stringify(patch)})` })
    .where(eq(accounts.id, accountId))
    .returning({ id: accounts.id });
  if (!res.length) throw notFound("account");
}

const WHAT: Record<AccountLimitName, (n: number) => string> = {
  schedules: (n) => `the account may hold ${n} schedules`,
  queuedBuilds: (n) => `the account may have ${n} builds queued or running at once`,
  artifactsKept: (n) => `each function keeps the artifacts of its last ${n} successful builds`,
  syncWaits: (n) => `the account may hold ${n} synchronous waits open at once`,
};

/** 429 limit_reached, naming the limit and its value (the operator raises it per account). */
export const limitReached = (name: AccountLimitName, value: number) =>
  new ApiError("limit_reached", `limit ${name} reached: ${WHAT[name](value)}`, [{ field: name, message: `limit is ${value}` }]);
