import { eq, getTableColumns } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { endpoints, functions } from "../db/schema.js";
import { ownLimitColumn } from "../limits/account-limits.js";

export type EndpointRow = typeof endpoints.$inferSelect;

/**
 * What the public door (/gc/<endpoint_id>) needs to answer a call, and nothing more: the endpoint's
 * settings (origin, ip, time window, daily limit, its account and function), whether its function
 * is paused, and the account's own limit of synchronous waits (null: the operator's default). The
 * build a task runs is not here: the function's shard decides it (worker/shard-admission/).
 */
export interface DoorFacts {
  endpoint: EndpointRow;
  paused: boolean;
  ownSyncWaits: number | null;
}

/** The facts in one D1 select; null when there is no such endpoint (or its function is gone). */
export async function readDoorFacts(db: Db, endpointId: string): Promise<DoorFacts | null> {
  const [row] = await db
    .select({ endpoint: getTableColumns(endpoints), paused: functions.paused, ownSyncWaits: ownLimitColumn("syncWaits", endpoints.accountId) })
    .from(endpoints)
    .innerJoin(functions, eq(functions.id, endpoints.functionId))
    .where(eq(endpoints.id, endpointId));
  return row ?? null;
}
