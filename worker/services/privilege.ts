import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import type { Bindings } from "../env.js";
import { accounts, functions } from "../db/schema.js";
import { ApiError, notFound } from "../errors.js";
import { allShards } from "../dispatch/client.js";

/**
 * Privileged functions run as root under runc, outside gVisor, on nodes that allow it: only
 * accounts the operator granted may have them (PATCH /v1/admin/accounts/<id> {"privileged": true}).
 */
export const privilegedNotAllowed = () =>
  new ApiError("privileged_not_allowed", "privileged functions are not allowed for this account; the operator must grant them first");

/** SQL true when the function's account holds the grant (inside a statement on `functions`). */
export const accountMayBePrivileged = sql`exists (select 1 from accounts a where a.id = "functions"."account_id" and a.privileged)`;

/**
 * Grants or revokes. A revocation also clears the flag on the account's functions, in the same
 * batch (their next tasks run unprivileged, under the sandbox), then every shard ends the account's
 * privileged tasks it holds, waiting or running, with 403 (see dispatch/refusals.ts).
 */
export async function setPrivilegeGrant(db: Db, env: Bindings, accountId: string, allowed: boolean): Promise<void> {
  const grant = db.update(accounts).set({ privileged: allowed }).where(eq(accounts.id, accountId)).returning({ id: accounts.id });
  const [granted] = allowed
    ? await db.batch([grant])
    : await db.batch([grant, db.update(functions).set({ privileged: false }).where(and(eq(functions.accountId, accountId), eq(functions.privileged, true)))]);
  if (!granted.length) throw notFound("account");
  await Promise.all(allShards(env).map((s) => s.privilegeChanged(accountId, allowed)));
}
