import { and, eq } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { functions } from "../db/schema.js";
import { notFound } from "../errors.js";
import { updateOwnFunction } from "../services/functions.js";
import type { Network, NetworkSet } from "../../shared/schemas/network.js";

/**
 * A function's network (api-decisions "Network egress"). Egress is off unless three parties agree:
 * the operator granted the account (`egress`, services/grants.ts), the function asks for it here,
 * and the node's agent allows it (the dispatcher places such tasks only there, dispatch/agents.ts).
 * Each task copies its function's egress when issued, so a change applies to tasks issued after it.
 */
export async function getNetwork(db: Db, accountId: string, functionId: string): Promise<Network> {
  const [row] = await db.select({ egress: functions.egress }).from(functions).where(and(eq(functions.id, functionId), eq(functions.accountId, accountId)));
  if (!row) throw notFound("function");
  return { egress: row.egress };
}

/** "internet" only for an account the operator granted (403 egress_not_allowed); "none" always. */
export async function setNetwork(db: Db, accountId: string, functionId: string, input: NetworkSet): Promise<void> {
  await updateOwnFunction(db, accountId, functionId, { egress: input.egress }, input.egress === "internet" ? "egress" : undefined);
}
