import { DurableObject } from "cloudflare:workers";
import type { StoreBindings } from "../bindings.js";

/**
 * One account's synchronous waits (`Prefer: wait` on /gc) held open now, as leases. A Durable
 * Object handles one call at a time and its SQLite writes are synchronous, so acquire() is an
 * atomic check-and-take across every isolate: at most `limit` leases are held at once. Each lease
 * expires on its own after the wait it was taken for (plus a grace), so one whose release never
 * came (the isolate died mid-wait) frees itself.
 */
export class SyncWaitLeases extends DurableObject<StoreBindings> {
  constructor(ctx: DurableObjectState, env: StoreBindings) {
    super(ctx, env);
    ctx.storage.sql.exec("create table if not exists leases (id text primary key, expires_at integer not null)");
  }

  /** A lease id, or null when `limit` leases are held. */
  acquire(limit: number, ttlMs: number): string | null {
    const sql = this.ctx.storage.sql;
    const now = Date.now();
    sql.exec("delete from leases where expires_at <= ?", now);
    if (this.countHeld() >= limit) return null;
    const id = crypto.randomUUID();
    sql.exec("insert into leases (id, expires_at) values (?, ?)", id, now + ttlMs);
    return id;
  }

  release(id: string): void {
    this.ctx.storage.sql.exec("delete from leases where id = ?", id);
  }

  /** Leases held now (expired ones do not count). */
  held(): number {
    return this.countHeld();
  }

  private countHeld(): number {
    return this.ctx.storage.sql.exec<{ n: number }>("select count(*) as n from leases where expires_at > ?", Date.now()).one().n;
  }
}
