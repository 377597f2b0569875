import { NO_USAGE, type UsageSums } from "./usage-sums.js";

const key = (accountId: string, period: string) => `${accountId}\n${period}`;

/**
 * The sums one shard has metered per account and period and D1 has committed (`shard_meter`, in
 * the shard's SQLite, mirrored in memory): the base every batch adds its outcomes to before it
 * sends the result, absolute, to D1's `shard_usage`. Written in the storage step that drops the
 * batch's outcomes from the log, so an outcome is in exactly one of the two.
 */
export class MeterBook {
  private readonly sums = new Map<string, { accountId: string; period: string; sums: UsageSums }>();

  /** `table`: the shard's outcomes and its failed attempts keep their sums apart (shard-meters.ts). */
  constructor(
    private readonly sql: SqlStorage,
    private readonly table: string,
  ) {
    sql.exec(`create table if not exists ${table} (
      account_id text not null, period text not null, invocations integer not null, duration_ms integer not null,
      mib_ms integer not null, primary key (account_id, period)) without rowid`);
    this.reload();
  }

  /** Reads storage again, as a fresh instance does. */
  reload(): void {
    this.sums.clear();
    for (const r of this.sql.exec<{ account_id: string; period: string; invocations: number; duration_ms: number; mib_ms: number }>(`select * from ${this.table}`))
      this.sums.set(key(r.account_id, r.period), {
        accountId: r.account_id, period: r.period, sums: { invocations: r.invocations, durationMs: r.duration_ms, mibMs: r.mib_ms },
      });
  }

  get(accountId: string, period: string): UsageSums {
    return this.sums.get(key(accountId, period))?.sums ?? NO_USAGE;
  }

  save(accountId: string, period: string, sums: UsageSums): void {
    this.sql.exec(
      `insert or replace into ${this.table} (account_id, period, invocations, duration_ms, mib_ms) values (?, ?, ?, ?, ?)`,
      accountId, period, sums.invocations, sums.durationMs, sums.mibMs,
    );
    this.sums.set(key(accountId, period), { accountId, period, sums });
  }

  /**
   * Forgets the periods before `current` that no outcome still in the log (`pending`, called only
   * when there is such a period) belongs to: D1 has their final sums. A period is kept while any of
   * its outcomes waits, since its next batch must send the sum on top of this one.
   */
  forgetPast(current: string, pending: () => Set<string>): void {
    const past = [...this.sums.values()].filter((s) => s.period < current);
    if (!past.length) return;
    const waiting = pending();
    for (const s of past) {
      if (waiting.has(key(s.accountId, s.period))) continue;
      this.sql.exec(`delete from ${this.table} where account_id = ? and period = ?`, s.accountId, s.period);
      this.sums.delete(key(s.accountId, s.period));
    }
  }
}

export { key as meterKey };
