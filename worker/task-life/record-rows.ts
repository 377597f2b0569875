import { getTableColumns, sql, type SQL } from "drizzle-orm";
import { tasks } from "../db/schema.js";
import type { TaskRow } from "../db/rows.js";
import { MAX_STATEMENT_JSON_BYTES } from "../db/json-slices.js";

export { MAX_STATEMENT_JSON_BYTES };

const fields = Object.entries(getTableColumns(tasks));
const names = sql.raw(fields.map(([, c]) => `"${c.name}"`).join(", "));
const values = sql.raw(fields.map((_, i) => `json_extract(value, '$[${i}]')`).join(", "));
const accountAt = fields.findIndex(([f]) => f === "accountId");

/** A row as the JSON array the statement reads: each value as its column stores it. */
const encoded = (r: TaskRow) => fields.map(([f, c]) => {
  const v = r[f as keyof TaskRow];
  return v == null ? null : c.mapToDriverValue(v);
});

/**
 * Inserts rows the shard created into `tasks`, each once: a row D1 has already (a retried batch
 * whose answer was lost) is left as it is (unless the shard's copy is finished and D1's is not: a
 * task cancelled here after an earlier batch wrote it unfinished), and no row is written for an
 * account deleted meanwhile (it would break its foreign key, and the account's records are gone). One JSON parameter a
 * statement, as many statements as the rows' size takes.
 */
export function rowsInserted(rows: TaskRow[]): SQL[] {
  const out: SQL[] = [];
  let part: string[] = [];
  let bytes = 0;
  const close = () => {
    if (!part.length) return;
    const json = `[${part.join(",")}]`;
    out.push(sql`insert into tasks (${names}) select ${values} from json_each(${json})
      where exists (select 1 from accounts a where a.id = json_extract(value, ${`$[${accountAt}]`}))
      on conflict (id) do update set status = excluded.status, progress = excluded.progress, finished_at = excluded.finished_at
        where tasks.finished_at is null and excluded.finished_at is not null`);
    part = [];
    bytes = 0;
  };
  for (const r of rows) {
    const e = JSON.stringify(encoded(r));
    if (bytes + e.length + 1 > MAX_STATEMENT_JSON_BYTES) close();
    part.push(e);
    bytes += e.length + 1;
  }
  close();
  return out;
}
