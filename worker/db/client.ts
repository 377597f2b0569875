import { drizzle, type DrizzleD1Database } from "drizzle-orm/d1";
import type { BatchItem } from "drizzle-orm/batch";
import * as schema from "./schema.js";

export type Db = DrizzleD1Database<typeof schema>;

export const openDb = (d1: D1Database): Db => drizzle(d1, { schema });

/** D1 binds at most 100 parameters a statement: run IN-lists in slices. */
export function chunks<T>(items: T[], size = 90): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** D1's atomic unit (it has no BEGIN): every statement commits, or none does. */
export async function runBatch(db: Db, stmts: BatchItem<"sqlite">[]): Promise<void> {
  if (stmts.length) await db.batch(stmts as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]]);
}
