import { DurableObject } from "cloudflare:workers";
import type { StoreBindings } from "../bindings.js";

/**
 * One endpoint's daily call counter. A Durable Object handles one call at a time and its SQLite
 * writes are synchronous, so acquire() is an atomic check-and-increment: under any concurrency
 * exactly `limit` calls a day get through. Only the current and previous days are kept.
 */
export class EndpointCounter extends DurableObject<StoreBindings> {
  constructor(ctx: DurableObjectState, env: StoreBindings) {
    super(ctx, env);
    ctx.storage.sql.exec("create table if not exists days (day text primary key, count integer not null)");
  }

  /** Counts one call on `day` unless `limit` calls were already counted. */
  acquire(day: string, limit: number): { accepted: boolean; count: number } {
    const sql = this.ctx.storage.sql;
    const count = sql.exec<{ count: number }>("select count from days where day = ?", day).toArray()[0]?.count ?? 0;
    if (count >= limit) return { accepted: false, count };
    sql.exec("insert into days (day, count) values (?, 1) on conflict(day) do update set count = count + 1", day);
    sql.exec("delete from days where day < ?", previousDay(day));
    return { accepted: true, count: count + 1 };
  }

  /** Gives back a call that was counted but not issued (the task could not be created). */
  release(day: string): void {
    this.ctx.storage.sql.exec("update days set count = max(count - 1, 0) where day = ?", day);
  }

  count(day: string): number {
    return this.ctx.storage.sql.exec<{ count: number }>("select count from days where day = ?", day).toArray()[0]?.count ?? 0;
  }
}

function previousDay(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() - 1);
  return d.toISOString().slice(0, 10);
}
