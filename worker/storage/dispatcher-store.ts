import type { StorageChange, StorageGiven } from "../../shared/schemas/storage.js";

/** A function's current storage as its dispatcher knows it: inline base64, or set (in R2) by a task. */
export interface StoredValue {
  functionId: string;
  accountId: string;
  /** base64 when small; null when the bytes are in R2 under the setting task's key. */
  value: string | null;
  size: number;
  setBy: string;
  setAt: number;
}

/**
 * The dispatcher's copy of its functions' storage (every task of a function goes to one shard, so
 * this copy sees every change in the order tasks finished). A task takes the value current when it
 * is assigned; D1 gets the change when the outcome is committed, for the owner's reads. Kept in the
 * object's SQLite storage and mirrored in memory like the queue.
 */
export class DispatcherStorage {
  private values = new Map<string, StoredValue>();

  constructor(private readonly sql: SqlStorage) {
    sql.exec(`create table if not exists fn_storage (
      function_id text primary key, account_id text not null, value text, size integer not null,
      set_by text not null, set_at integer not null)`);
    this.reload();
  }

  reload(): void {
    this.values = new Map();
    for (const r of this.sql.exec<{ function_id: string; account_id: string; value: string | null; size: number; set_by: string; set_at: number }>("select * from fn_storage")) {
      this.values.set(r.function_id, { functionId: r.function_id, accountId: r.account_id, value: r.value, size: r.size, setBy: r.set_by, setAt: r.set_at });
    }
  }

  /** Applies a finished task's change; returns what it replaced (so an R2 copy can go). */
  apply(functionId: string, accountId: string, taskId: string, change: StorageChange, at: number): StoredValue | undefined {
    const before = this.values.get(functionId);
    if (change.op === "clear") {
      this.clear(functionId);
      return before;
    }
    const next: StoredValue = { functionId, accountId, value: change.value ?? null, size: change.size, setBy: taskId, setAt: at };
    this.sql.exec(
      "insert or replace into fn_storage (function_id, account_id, value, size, set_by, set_at) values (?, ?, ?, ?, ?, ?)",
      functionId, accountId, next.value, next.size, next.setBy, next.setAt,
    );
    this.values.set(functionId, next);
    return before;
  }

  clear(functionId: string): void {
    if (!this.values.delete(functionId)) return;
    this.sql.exec("delete from fn_storage where function_id = ?", functionId);
  }

  /** What a task of the function is handed: the value inline, or the path to GET it from. */
  given(functionId: string, taskId: string, path: (taskId: string, setBy: string) => string): StorageGiven | undefined {
    const v = this.values.get(functionId);
    if (!v) return undefined;
    return v.value !== null ? { value: v.value } : { path: path(taskId, v.setBy) };
  }
}

/**
 * A task.assign frame (serialized once, when queued) with the function's storage added: spliced
 * into the JSON text rather than parsed and serialized again on the hot path.
 */
export function withStorage(frame: string, given: StorageGiven | undefined): string {
  if (!given || !frame.endsWith("}")) return frame;
  return `${frame.slice(0, -1)},"storage":${JSON.stringify(given)}}`;
}
