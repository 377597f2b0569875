import { eq } from "drizzle-orm";
import type { Bindings } from "../env.js";
import type { Db } from "../db/client.js";
import { endpoints } from "../db/schema.js";
import { counterFor } from "../counters/client.js";

/**
 * Writers of what the door holds (endpoint-door/book.ts) tell the endpoints' objects after their D1
 * write and before their API call answers, so that the very next call sees the change: an
 * endpoint's edit or deletion, its function's pause or deletion, its account's limit of
 * synchronous waits. A notice that fails fails the API call (the caller retries); the object's
 * background refresh (DOOR_REFRESH_MS) catches up with a write whose notice was lost.
 */
export const endpointsChanged = (env: Bindings, ids: string[]) => Promise.all(ids.map((id) => counterFor(env, id).doorChanged(id)));

export const endpointsGone = (env: Bindings, ids: string[]) => Promise.all(ids.map((id) => counterFor(env, id).doorGone(id)));

/** The endpoints of a function or of an account, whose doors a change of it reaches. */
export async function endpointIdsOf(db: Db, of: { functionId: string } | { accountId: string }): Promise<string[]> {
  const where = "functionId" in of ? eq(endpoints.functionId, of.functionId) : eq(endpoints.accountId, of.accountId);
  return (await db.select({ id: endpoints.id }).from(endpoints).where(where)).map((r) => r.id);
}
