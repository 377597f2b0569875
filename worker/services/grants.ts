import { and, eq, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client.js";
import type { Bindings } from "../env.js";
import { accounts, functions } from "../db/schema.js";
import { ApiError, notFound } from "../errors.js";
import { allShards } from "../dispatch/client.js";
import { admissionChanged } from "../shard-admission/notify.js";
import type { Grant } from "../dispatch/revoked-grants.js";

/**
 * The operator's grants to an account (PATCH /v1/admin/accounts/<id>), both off by default:
 * `privileged`, for functions that run as root under runc, outside gVisor; `egress`, for
 * functions that reach the network. Only granted accounts may turn either on for a function.
 */
const REFUSED: Record<Grant, () => ApiError> = {
  privileged: () => new ApiError("privileged_not_allowed", "privileged functions are not allowed for this account; the operator must grant them first"),
  egress: () => new ApiError("egress_not_allowed", "network egress is not allowed for this account; the operator must grant it first"),
};
export const grantRefused = (grant: Grant) => REFUSED[grant]();

/** SQL true when the function's account holds the grant (inside a statement on `functions`). */
export const accountHolds = (grant: Grant): SQL => sql`exists (select 1 from accounts a where a.id = "functions"."account_id" and a.${sql.identifier(grant)})`;

/** What a revocation turns off on the account's functions: their next tasks run without the grant. */
const turnOff = (db: Db, grant: Grant, accountId: string) =>
  grant === "privileged"
    ? db.update(functions).set({ privileged: false }).where(and(eq(functions.accountId, accountId), eq(functions.privileged, true)))
    : db.update(functions).set({ egress: "none" }).where(and(eq(functions.accountId, accountId), eq(functions.egress, "internet")));

/**
 * Grants or revokes. A revocation also turns the need off on the account's functions, in the same
 * batch, then every shard ends the account's tasks that need the grant, waiting or running, with
 * 403 (see dispatch/refusals.ts).
 */
export async function setGrant(db: Db, env: Bindings, grant: Grant, accountId: string, allowed: boolean): Promise<void> {
  const update = db.update(accounts).set({ [grant]: allowed }).where(eq(accounts.id, accountId)).returning({ id: accounts.id });
  const [granted] = allowed ? await db.batch([update]) : await db.batch([update, turnOff(db, grant, accountId)]);
  if (!granted.length) throw notFound("account");
  await Promise.all(allShards(env).map((s) => s.grantChanged(grant, accountId, allowed)));
  // A revocation turned the need off on the account's functions: the rows admission caches changed.
  if (!allowed) await admissionChanged(env, { accountId });
}
