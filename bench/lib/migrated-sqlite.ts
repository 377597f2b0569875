import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";

/** A fresh database file with every migration applied, in order, as `wrangler d1 migrations apply` does. */
export function migratedSqlite(prefix: string): DatabaseSync {
  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), prefix)), "d1.sqlite");
  const db = new DatabaseSync(file);
  db.exec("pragma synchronous = off; pragma journal_mode = wal; pragma foreign_keys = on");
  const dir = path.join(import.meta.dirname, "../../migrations");
  for (const name of fs.readdirSync(dir).filter((f) => f.endsWith(".sql")).sort())
    for (const statement of fs.readFileSync(path.join(dir, name), "utf8").split("--> statement-breakpoint")) if (statement.trim()) db.exec(statement);
  return db;
}
