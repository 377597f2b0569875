import { IDEMPOTENCY_KEEP_MS } from "../../shared/schemas/idempotency.js";

/**
 * How long one call may hold a key while it issues its task. Issuing is one D1 statement (and an R2
 * put for a large input); a call cut off meanwhile never settles its claim, and after this another
 * call with the key may claim it again.
 */
export const CLAIM_MS = 30_000;
/** Expired keys deleted per claim: deletion keeps pace with creation without a statement of its own size. */
const PURGE_PER_CLAIM = 16;

/** What a call with a key is told by the shard. */
export type KeyClaim =
  /** First with this key (or the earlier holder gave up): issue the task, then settle the claim. */
  | { kind: "claimed"; claim: string }
  /** The key names this task already: answer with it. */
  | { kind: "replay"; taskId: string }
  /** The key was used for a call that asked for something else. */
  | { kind: "conflict" };

interface KeyRow extends Record<string, SqlStorageValue> {
  fingerprint: string;
  task_id: string | null;
  claim: string | null;
  at: number;
}

/**
 * The Idempotency-Keys of one dispatcher shard, in its SQLite storage. Every task of a function is
 * created through its shard (dispatch/client.ts), so one shard sees every call with a given key and
 * decides alone, in its single thread, which call issues the task: calls arriving while the first
 * is issuing wait here for its outcome instead of racing it (api-decisions "Idempotency-Key").
 */
export class IdempotencyKeys {
  /** Calls waiting for a claim of `scope\nkey` to settle. */
  private readonly waiting = new Map<string, Set<() => void>>();

  constructor(private readonly sql: SqlStorage) {
    sql.exec(`create table if not exists idempotency_key (
      scope text not null, key text not null, fingerprint text not null,
      task_id text, claim text, at integer not null,
      primary key (scope, key)) without rowid`);
    sql.exec("create index if not exists idempotency_key_at on idempotency_key (at)");
  }

  async claim(scope: string, key: string, fingerprint: string): Promise<KeyClaim> {
    this.purge(Date.now());
    for (;;) {
      const now = Date.now();
      const row = this.sql.exec<KeyRow>("select fingerprint, task_id, claim, at from idempotency_key where scope = ? and key = ?", scope, key).toArray()[0];
      const live = row && row.at > now - IDEMPOTENCY_KEEP_MS && (row.task_id !== null || row.at > now - CLAIM_MS);
      if (live) {
        if (row.fingerprint !== fingerprint) return { kind: "conflict" };
        if (row.task_id !== null) return { kind: "replay", taskId: row.task_id };
        await this.settled(scope, key, row.at + CLAIM_MS - now);
        continue;
      }
      const claim = crypto.randomUUID();
      this.sql.exec("insert or replace into idempotency_key (scope, key, fingerprint, task_id, claim, at) values (?, ?, ?, null, ?, ?)", scope, key, fingerprint, claim, now);
      return { kind: "claimed", claim };
    }
  }

  /** The claim's call issued `taskId` (the key names it from now on), or issued nothing (null: the key is free again). */
  settle(scope: string, key: string, claim: string, taskId: string | null): void {
    if (taskId) this.sql.exec("update idempotency_key set task_id = ?, claim = null where scope = ? and key = ? and claim = ?", taskId, scope, key, claim);
    else this.sql.exec("delete from idempotency_key where scope = ? and key = ? and claim = ?", scope, key, claim);
    const id = `${scope}\n${key}`;
    for (const wake of this.waiting.get(id) ?? []) wake();
    this.waiting.delete(id);
  }

  /** Resolves when a claim of the key settles, or after `ms` (its holder may have gone). */
  private settled(scope: string, key: string, ms: number): Promise<void> {
    const id = `${scope}\n${key}`;
    return new Promise((resolve) => {
      const set = this.waiting.get(id) ?? new Set();
      this.waiting.set(id, set);
      const wake = () => {
        clearTimeout(timer);
        set.delete(wake);
        if (!set.size && this.waiting.get(id) === set) this.waiting.delete(id);
        resolve();
      };
      const timer = setTimeout(wake, Math.max(0, ms));
      set.add(wake);
    });
  }

  private purge(now: number): void {
    this.sql.exec(
      "delete from idempotency_key where (scope, key) in (select scope, key from idempotency_key where at <= ? limit ?)",
      now - IDEMPOTENCY_KEEP_MS,
      PURGE_PER_CLAIM,
    );
  }
}
