/**
 * What one shard holds of its accounts' leases, in its SQLite storage and mirrored in memory:
 * storage is written on the hot path (so nothing is lost to an eviction), never read there.
 *
 * - `admission_lease`, one row per account and billing period: `granted` and `returned` as D1 has
 *   them (returned is written here first), `taken` the tasks admitted here in the period, `settled`
 *   the ended ones D1 has counted.
 * - `admission_slots`, one row per account: slots of the pending cap D1 lets this shard hold, and
 *   the unfinished tasks admitted here.
 * - `admission_ended`: tasks that ended and are not yet settled in D1.
 */
export interface Lease {
  accountId: string;
  period: string;
  granted: number;
  returned: number;
  taken: number;
  settled: number;
}

export interface Slots {
  accountId: string;
  held: number;
  unfinished: number;
}

export interface Ended {
  taskId: string;
  accountId: string;
  period: string;
}

const key = (accountId: string, period: string) => `${accountId}\n${period}`;

export class LeaseBook {
  private readonly leases = new Map<string, Lease>();
  private readonly slots = new Map<string, Slots>();
  readonly ended = new Map<string, Ended>();

  constructor(private readonly sql: SqlStorage) {
    sql.exec(`create table if not exists admission_lease (
      account_id text not null, period text not null, granted integer not null, returned integer not null,
      taken integer not null, settled integer not null, primary key (account_id, period)) without rowid`);
    sql.exec(`create table if not exists admission_slots (
      account_id text primary key, held integer not null, unfinished integer not null) without rowid`);
    sql.exec("create table if not exists admission_ended (task_id text primary key, account_id text not null, period text not null) without rowid");
    this.reload();
  }

  /** Reads storage again, as a fresh instance does. */
  reload(): void {
    this.leases.clear();
    this.slots.clear();
    this.ended.clear();
    for (const r of this.sql.exec<{ account_id: string; period: string; granted: number; returned: number; taken: number; settled: number }>("select * from admission_lease"))
      this.leases.set(key(r.account_id, r.period), { accountId: r.account_id, period: r.period, granted: r.granted, returned: r.returned, taken: r.taken, settled: r.settled });
    for (const r of this.sql.exec<{ account_id: string; held: number; unfinished: number }>("select * from admission_slots"))
      this.slots.set(r.account_id, { accountId: r.account_id, held: r.held, unfinished: r.unfinished });
    for (const r of this.sql.exec<{ task_id: string; account_id: string; period: string }>("select * from admission_ended"))
      this.ended.set(r.task_id, { taskId: r.task_id, accountId: r.account_id, period: r.period });
  }

  lease(accountId: string, period: string): Lease | undefined {
    return this.leases.get(key(accountId, period));
  }

  slotsOf(accountId: string): Slots | undefined {
    return this.slots.get(accountId);
  }

  allLeases(): IterableIterator<Lease> {
    return this.leases.values();
  }

  allSlots(): IterableIterator<Slots> {
    return this.slots.values();
  }

  /** The lease's row as it is in memory now, created if new. */
  saveLease(l: Lease): void {
    this.leases.set(key(l.accountId, l.period), l);
    this.sql.exec(
      "insert or replace into admission_lease (account_id, period, granted, returned, taken, settled) values (?, ?, ?, ?, ?, ?)",
      l.accountId, l.period, l.granted, l.returned, l.taken, l.settled,
    );
  }

  saveSlots(s: Slots): void {
    this.slots.set(s.accountId, s);
    this.sql.exec("insert or replace into admission_slots (account_id, held, unfinished) values (?, ?, ?)", s.accountId, s.held, s.unfinished);
  }

  /** An account that holds no slot and has no unfinished task here: nothing to keep. */
  dropSlots(accountId: string): void {
    this.slots.delete(accountId);
    this.sql.exec("delete from admission_slots where account_id = ?", accountId);
  }

  /** A lease of a past period whose every task is settled: nothing more will be written of it. */
  dropLease(l: Lease): void {
    this.leases.delete(key(l.accountId, l.period));
    this.sql.exec("delete from admission_lease where account_id = ? and period = ?", l.accountId, l.period);
  }

  addEnded(e: Ended): void {
    if (this.ended.has(e.taskId)) return;
    this.ended.set(e.taskId, e);
    this.sql.exec("insert or ignore into admission_ended (task_id, account_id, period) values (?, ?, ?)", e.taskId, e.accountId, e.period);
  }

  removeEnded(taskIds: string[]): void {
    this.sql.exec("delete from admission_ended where task_id in (select value from json_each(?))", JSON.stringify(taskIds));
    for (const id of taskIds) this.ended.delete(id);
  }
}
