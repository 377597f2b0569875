import { DurableObject } from "cloudflare:workers";
import type { StoreBindings } from "../bindings.js";
import { openDb, type Db } from "../db/client.js";
import { DoorBook, type DoorAnswer } from "../endpoint-door/book.js";

/**
 * One endpoint's object: its daily call counter, and the facts its public door needs
 * (endpoint-door/book.ts). A Durable Object handles one call at a time and its SQLite writes are
 * synchronous, so acquire() is an atomic check-and-increment: under any concurrency exactly
 * `limit` calls a day get through. Only the current and previous days are kept.
 */
export class EndpointCounter extends DurableObject<StoreBindings> {
  /** D1 as the door reads it (a test may point it at a failing one, as the dispatcher's). */
  private db: Db;
  private readonly doorBook: DoorBook;

  constructor(ctx: DurableObjectState, env: StoreBindings) {
    super(ctx, env);
    ctx.storage.sql.exec("create table if not exists days (day text primary key, count integer not null)");
    this.db = openDb(env);
    this.doorBook = new DoorBook(ctx.storage.sql, () => this.db);
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

  /** What the public door needs of this endpoint: from storage, D1 only when not held (endpoint-door/). */
  door(endpointId: string): Promise<DoorAnswer> {
    return this.doorBook.answer(endpointId);
  }

  /** The endpoint, its function's pause or its account's limits changed (endpoint-door/notify.ts). */
  doorChanged(endpointId: string): void {
    this.doorBook.changed(endpointId);
  }

  /** The endpoint was deleted, itself or with its function. */
  doorGone(endpointId: string): void {
    this.doorBook.gone(endpointId);
  }
}

function previousDay(day: string): string {
  const d = new Date(`${day}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() - 1);
  return d.toISOString().slice(0, 10);
}
