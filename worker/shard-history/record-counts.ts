import type { TaskRow } from "../db/rows.js";
import { DAY_MS, startOfUtcDay } from "../lib/time.js";
import { ARCHIVED_DAYS_READ } from "../task-history/counts.js";
import type { TaskScope } from "../tasks/counts.js";
import { stored, unstored } from "./id-bytes.js";

/** Pruning runs at most this often, as the finished records' does. */
const PRUNE_EVERY_MS = 10_000;
/** Day rows one pruning drops, so that a backlog never makes one storage step long. */
const PRUNE_ROWS = 1_000;

const ADD_TOTAL = "insert into shard_task_total (scope, tasks) values (?, 1) on conflict do update set tasks = tasks + 1";
const ADD_DAY = "insert into shard_task_day (account, day, function, tasks) values (?, ?, ?, 1) on conflict do update set tasks = tasks + 1";

/**
 * What D1's counts of a rowless task would be (held-tasks.ts: a task D1 never gets a row of): a
 * function's and an account's total, and a function's tasks per UTC day of issue for the console's
 * chart. D1 counts a task with a row by that row and, once it leaves D1, by the counts its move or
 * release adds (task-history/counts.ts); a rowless one is counted here alone, in the storage step
 * that creates it, so exactly once, and the Worker adds these to D1's answer (task-life/held-reads.ts).
 *
 * A total is a row a function or account for good (a function's total outlives it, as D1's does);
 * the days are kept as long as a chart reads them (`ARCHIVED_DAYS_READ`).
 */
export class RecordCounts {
  private lastPrune = 0;

  constructor(private readonly sql: SqlStorage) {
    sql.exec("create table if not exists shard_task_total (scope blob primary key, tasks integer not null) without rowid");
    sql.exec(`create table if not exists shard_task_day (
      account blob not null, day integer not null, function blob not null, tasks integer not null, primary key (account, day, function)) without rowid`);
    sql.exec("create index if not exists shard_task_day_age on shard_task_day (day)");
  }

  /** Counts a rowless task: called in the storage step that creates it. */
  created(row: Pick<TaskRow, "accountId" | "functionId" | "issuedAt">, now: number): void {
    this.sql.exec(ADD_TOTAL, stored(row.functionId));
    this.sql.exec(ADD_TOTAL, stored(row.accountId));
    this.sql.exec(ADD_DAY, stored(row.accountId), startOfUtcDay(row.issuedAt), stored(row.functionId));
    this.prune(now);
  }

  /** Rowless tasks of a function or an account, ever (an endpoint's total is D1's rows alone, and no route shows it). */
  total(scope: TaskScope): number {
    if (scope.endpointId) return 0;
    const [row] = this.sql.exec<{ tasks: number }>("select tasks from shard_task_total where scope = ?", stored(scope.functionId ?? scope.accountId)).toArray();
    return row ? Number(row.tasks) : 0;
  }

  /** The account's rowless tasks per function and UTC day issued since `since`, a UTC day's start (day 0). */
  days(accountId: string, since: number): { functionId: string; day: number; count: number }[] {
    type Stored = ArrayBuffer | string;
    return this.sql
      .exec<{ day: number; function: Stored; tasks: number }>("select day, function, tasks from shard_task_day where account = ? and day >= ?", stored(accountId), since)
      .toArray()
      .map((r) => ({ functionId: unstored(r.function), day: Math.floor((Number(r.day) - since) / DAY_MS), count: Number(r.tasks) }));
  }

  /** Drops days older than any chart reads, at most every 10 seconds. */
  prune(now: number): number {
    if (now - this.lastPrune < PRUNE_EVERY_MS) return 0;
    this.lastPrune = now;
    const before = startOfUtcDay(now) - ARCHIVED_DAYS_READ * DAY_MS;
    return this.sql.exec(
      `delete from shard_task_day where (account, day, function) in (select account, day, function from shard_task_day where day < ? limit ${PRUNE_ROWS})`,
      before,
    ).rowsWritten;
  }
}
