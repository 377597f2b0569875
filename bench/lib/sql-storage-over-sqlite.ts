import type { DatabaseSync, SQLInputValue } from "node:sqlite";

/**
 * Just enough of a Durable Object's `SqlStorage`, over a node:sqlite database, to run a shard's own
 * storage classes outside workerd (bench/shard-history.ts). Blobs cross as ArrayBuffers, as they do
 * in workerd. Not an emulation: no implicit transactions (the caller opens them), no limits.
 */
export function sqlStorageOver(db: DatabaseSync): SqlStorage {
  const statements = new Map<string, ReturnType<DatabaseSync["prepare"]>>();
  const prepared = (query: string) => {
    let s = statements.get(query);
    if (!s) statements.set(query, (s = db.prepare(query)));
    return s;
  };
  const input = (v: unknown): SQLInputValue => (v instanceof ArrayBuffer ? new Uint8Array(v) : (v as SQLInputValue));
  const output = (row: Record<string, unknown>) => {
    for (const [k, v] of Object.entries(row)) if (v instanceof Uint8Array) row[k] = v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength);
    return row;
  };
  const exec = (query: string, ...bindings: unknown[]) => {
    const s = prepared(query);
    const columnNames = s.columns().map((c) => c.name);
    let rows: Record<string, unknown>[] = [];
    let rowsWritten = 0;
    if (columnNames.length) rows = (s.all(...bindings.map(input)) as Record<string, unknown>[]).map(output);
    else rowsWritten = Number(s.run(...bindings.map(input)).changes);
    return {
      columnNames,
      rowsRead: rows.length,
      rowsWritten,
      toArray: () => rows,
      one: () => {
        if (rows.length !== 1) throw new Error(`expected one row, got ${rows.length}`);
        return rows[0];
      },
      raw: () => rows.map((r) => Object.values(r))[Symbol.iterator](),
      next: () => ({ done: true, value: undefined }),
      [Symbol.iterator]: () => rows[Symbol.iterator](),
    };
  };
  return { exec, databaseSize: 0, Cursor: undefined, Statement: undefined } as unknown as SqlStorage;
}
