import { getTableColumns } from "drizzle-orm";
import { rowOf } from "../db/client.js";
import type { TaskRow } from "../db/rows.js";
import { tasks } from "../db/schema/tasks.js";
import { stored, unstored } from "./id-bytes.js";

/**
 * A finished task's record as its shard keeps it (docs/dispatch.md, "The design"): every column of
 * D1's `tasks` row, under the same names, from the drizzle schema so that a new column cannot be
 * forgotten here. What makes it compact: ids (any text shaped like one) packed into 19 bytes rather
 * than 30 characters, integers as SQLite's own variable-length integers, and the payloads (input,
 * result headers and body, log) inline only up to `INLINE_PAYLOAD_CHARS` each once archived. A
 * larger payload is then left out and named in `far` (a bit a column): the reader takes the record
 * from D1 or an archive, as it does for a task the shard does not hold. A shard keeps an hour of its tasks, at up
 * to a few hundred a second, within a Durable Object's 10 GB only because of that cap.
 */
export const INLINE_PAYLOAD_CHARS = 512;

const COLUMNS = Object.entries(getTableColumns(tasks)).map(([field, column]) => ({ field: field as keyof TaskRow, column }));
/** The columns a record may leave out, in the order of their bits in `far`. */
const PAYLOADS: (keyof TaskRow)[] = ["input", "resultHeaders", "resultBody", "log"];

/** SQL column names of the record, `far` last. */
export const RECORD_COLUMNS = [...COLUMNS.map((c) => c.column.name), "far"];

/**
 * Each column's declared type, D1's: its affinity stores an integral number as a variable-length
 * integer (a JS number arrives as a double, 8 bytes) and leaves packed ids, blobs, as they are.
 */
export const RECORD_TYPES: Record<string, string> = { ...Object.fromEntries(COLUMNS.map(({ column }) => [column.name, column.getSQLType()])), far: "integer" };

export type RecordValue = string | number | ArrayBuffer | null;

/**
 * The values of `RECORD_COLUMNS` for a row (as `rowOf` reads it from D1), whole: a record not yet in
 * its shard's archive keeps every payload D1 keeps (the archive's chunk is written from it), and
 * `cutPayloadsSql` leaves out the larger ones once it is archived.
 */
export function encodeRecord(row: TaskRow): RecordValue[] {
  const values = COLUMNS.map(({ field, column }) => {
    const v = row[field];
    if (v == null) return null;
    const driver = column.mapToDriverValue(v) as string | number;
    return typeof driver === "string" ? stored(driver) : driver;
  });
  return [...values, 0];
}

const payloadColumns = () => PAYLOADS.map((field) => COLUMNS.find((c) => c.field === field)!.column.name);

/**
 * An update's SET list that leaves out each payload over `INLINE_PAYLOAD_CHARS` and names it in
 * `far`, its bit in `PAYLOADS`' order (SQLite reads every old value before it sets any).
 */
export const cutPayloadsSql = (): string => {
  const cols = payloadColumns();
  const over = (c: string) => `length(${c}) > ${INLINE_PAYLOAD_CHARS}`;
  return [
    ...cols.map((c) => `${c} = case when ${over(c)} then null else ${c} end`),
    `far = far | ${cols.map((c, i) => `(case when ${over(c)} then ${1 << i} else 0 end)`).join(" | ")}`,
  ].join(", ");
};

export interface KeptRecord {
  row: TaskRow;
  /** The payload fields this record left out (null in `row`): D1 or the archive holds them. */
  far: (keyof TaskRow)[];
}

/** A stored record back to the row D1 would answer, but for the payloads named in `far`. */
export function decodeRecord(kept: Record<string, SqlStorageValue>): KeptRecord {
  const raw: Record<string, unknown> = {};
  for (const { column } of COLUMNS) raw[column.name] = unstored(kept[column.name]);
  const bits = Number(kept.far ?? 0);
  return { row: rowOf(tasks, raw), far: PAYLOADS.filter((_, i) => bits & (1 << i)) };
}
