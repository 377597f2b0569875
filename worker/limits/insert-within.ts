import { getTableColumns, sql, type InferSelectModel, type SQL, type Table } from "drizzle-orm";
import { rowOf, sqlBatch, type Db } from "../db/client.js";

/**
 * Inserts one row unless `held` (a count the row would add to) has reached `limit`, in one
 * statement: D1 runs statements one at a time, so concurrent inserts can never together pass the
 * limit, which a count followed by an insert could. The inserted row, or undefined when refused.
 */
export async function insertWithin<T extends Table>(
  db: Db,
  table: T,
  values: Partial<InferSelectModel<T>>,
  held: SQL,
  limit: number,
): Promise<InferSelectModel<T> | undefined> {
  const columns = getTableColumns(table);
  const given = Object.entries(values).filter(([, v]) => v !== undefined);
  const names = sql.join(given.map(([field]) => sql.identifier(columns[field]!.name)), sql`, `);
  const bound = sql.join(given.map(([field, v]) => sql`${columns[field]!.mapToDriverValue(v)}`), sql`, `);
  const [rows] = await sqlBatch(db, [sql`insert into ${table} (${names}) select ${bound} where (${held}) < ${limit} returning *`]);
  return rows?.[0] ? rowOf(table, rows[0]) : undefined;
}
