import type { DatabaseSync, SQLInputValue } from "node:sqlite";

/**
 * Just enough of the D1 binding, over a node:sqlite database, to run the Worker's own write code
 * (drizzle's D1 driver, sqlBatch) on a database file outside workerd: bench/task-history.ts fills the
 * local D1 file through the same statements the Worker issues, far faster than through the HTTP
 * door. Not a D1 emulation: no meta, no limits, every statement synchronous.
 */
export function d1OverSqlite(db: DatabaseSync): D1Database {
  const statements = new Map<string, ReturnType<DatabaseSync["prepare"]>>();
  const prepared = (query: string) => {
    let s = statements.get(query);
    if (!s) statements.set(query, (s = db.prepare(query)));
    return s;
  };
  const value = (v: unknown): SQLInputValue => (v === undefined ? null : typeof v === "boolean" ? Number(v) : (v as SQLInputValue));
  const statement = (query: string, params: unknown[] = []): D1PreparedStatement => {
    const args = () => params.map(value);
    const all = () => {
      const s = prepared(query);
      s.setReturnArrays(false);
      return { results: s.all(...args()) as Record<string, unknown>[], success: true as const, meta: {} };
    };
    return {
      bind: (...p: unknown[]) => statement(query, p),
      all: async () => all(),
      run: async () => all(),
      first: async (col?: string) => {
        const row = all().results[0];
        return (row === undefined ? null : col ? row[col] : row) as never;
      },
      raw: async () => {
        const s = prepared(query);
        s.setReturnArrays(true);
        return s.all(...args()) as never;
      },
    } as unknown as D1PreparedStatement;
  };
  return {
    prepare: (query: string) => statement(query),
    batch: async (stmts: D1PreparedStatement[]) => {
      db.exec("begin");
      try {
        const out = [];
        for (const s of stmts) out.push(await s.all());
        db.exec("commit");
        return out;
      } catch (e) {
        db.exec("rollback");
        throw e;
      }
    },
    exec: async (query: string) => (db.exec(query), { count: 1, duration: 0 }),
  } as unknown as D1Database;
}
