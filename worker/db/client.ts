import { getTableColumns, type InferSelectModel, type SQL, type Table } from "drizzle-orm";
import { drizzle, type DrizzleD1Database } from "drizzle-orm/d1";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import type { BatchItem } from "drizzle-orm/batch";
import * as schema from "./schema.js";
import { troubled, type TroubleVars } from "./d1-trouble.js";

export type Db = DrizzleD1Database<typeof schema> & { $client: D1Database };

/** By binding, then by its trouble settings (constant in a deployment; tests may open one binding both ways). */
const opened = new WeakMap<D1Database, Map<string, Db>>();

/**
 * One drizzle instance per binding: building one walks the whole schema, a cost per request
 * otherwise. Every D1 user opens it here, so a delay or a test's failure window (d1-trouble.ts)
 * reaches them all.
 */
export function openDb(env: { DB: D1Database } & TroubleVars): Db {
  let byTrouble = opened.get(env.DB);
  if (!byTrouble) opened.set(env.DB, (byTrouble = new Map()));
  const key = `${env.D1_DELAY_MS ?? ""}|${env.D1_TEST_FAILURES ?? ""}`;
  let db = byTrouble.get(key);
  if (!db) byTrouble.set(key, (db = drizzle(troubled(env.DB, env), { schema })));
  return db;
}

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

/**
 * A row of `table` as raw SQL returns it (column names, driver values) in drizzle's shape (field
 * names, JSON and boolean columns decoded), for statements written in SQL rather than built.
 */
export function rowOf<T extends Table>(table: T, raw: Record<string, unknown>): InferSelectModel<T> {
  const out: Record<string, unknown> = {};
  for (const [field, col] of Object.entries(getTableColumns(table))) {
    const v = raw[col.name];
    out[field] = v == null ? null : col.mapFromDriverValue(v);
  }
  return out as InferSelectModel<T>;
}

const dialect = new SQLiteAsyncDialect();

/**
 * Statements written with drizzle's `sql` template (table and column references, bound values),
 * sent as one D1 batch: raw rows back, one array a statement. For set-based statements drizzle's
 * builders cannot express (update … from, insert … select … join), where a batch of builders
 * would be one statement per row.
 */
export async function sqlBatch(db: Db, statements: SQL[]): Promise<Record<string, unknown>[][]> {
  const d1 = db.$client;
  const prepared = statements.map((s) => {
    const q = dialect.sqlToQuery(s);
    return d1.prepare(q.sql).bind(...q.params);
  });
  const results = await d1.batch<Record<string, unknown>>(prepared);
  return results.map((r) => r.results ?? []);
}
