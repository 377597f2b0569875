import { z } from "zod";

/**
 * What one account may hold (api-decisions, "What one account may hold"): each limit has an
 * operator default (the ACCOUNT_LIMITS variable overrides the built-in ones) and may be changed per
 * account with `PATCH /v1/admin/accounts/<id> {"limits": {...}}`.
 */
export type AccountLimitName = "schedules" | "queuedBuilds" | "artifactsKept" | "syncWaits";
export type AccountLimits = Record<AccountLimitName, number>;

export const BUILT_IN_ACCOUNT_LIMITS: AccountLimits = { schedules: 100, queuedBuilds: 10, artifactsKept: 5, syncWaits: 32 };

/**
 * The range each limit may be set to. 0 schedules, queued builds or synchronous waits is allowed
 * (the account may hold none); at least the newest successful build keeps its artifact, or the
 * function could not run. The upper bounds keep a typo from lifting a limit out of sight.
 */
const limitValue = (name: AccountLimitName, min: number, max: number) =>
  z.number({ error: `${name} must be an integer` }).int(`${name} must be an integer`).min(min, `${name} must be at least ${min}`).max(max, `${name} must be at most ${max}`);

const limitValues = {
  schedules: limitValue("schedules", 0, 100_000),
  queuedBuilds: limitValue("queuedBuilds", 0, 1_000),
  artifactsKept: limitValue("artifactsKept", 1, 100),
  syncWaits: limitValue("syncWaits", 0, 10_000),
} satisfies Record<AccountLimitName, z.ZodType<number>>;

/** A PATCH's `limits`: any subset; `null` drops the account's own value, back to the default. */
export const accountLimitsPatch = z.strictObject({
  schedules: limitValues.schedules.nullable().optional(),
  queuedBuilds: limitValues.queuedBuilds.nullable().optional(),
  artifactsKept: limitValues.artifactsKept.nullable().optional(),
  syncWaits: limitValues.syncWaits.nullable().optional(),
});
export type AccountLimitsPatch = z.infer<typeof accountLimitsPatch>;

/** Operator defaults (ACCOUNT_LIMITS) and an account's own values: any subset, no nulls. */
export const accountLimitsPartial = z.strictObject({
  schedules: limitValues.schedules.optional(),
  queuedBuilds: limitValues.queuedBuilds.optional(),
  artifactsKept: limitValues.artifactsKept.optional(),
  syncWaits: limitValues.syncWaits.optional(),
});

export const accountLimits = z.strictObject(limitValues);
