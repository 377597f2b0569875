/**
 * What keeping finished records in the shard costs (step 1 of the shard-resident history,
 * docs/dispatch.md): a shard's storage work per task with and without `FinishedRecords.keep`, on
 * the shard's own classes (the outcome log, the held rows) over node:sqlite, in batches of 64 as a
 * group commit writes them, and the bytes a kept record takes against D1's row of the same task
 * (the migrations' `tasks` table with its indexes) measured in the same run. Step 3: the same with
 * each task's issue counted too (`IssueCounts.issued`, in the step that holds the row), and the
 * bytes the week's issue times take in the shard against D1's minutes of the same issues, at a
 * busy shard's rate and a quiet one's. And how long a shard's first count takes (its constructor
 * counts the hour of tasks it holds and keeps, once, when it first runs step 3's code): against the
 * same issues counted one by one as they are issued.
 * Run: npx tsx bench/shard-history.ts [--tasks 20000] [--rounds 5] [--first 900000]
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";
import { getTableColumns } from "drizzle-orm";
import type { TaskRow } from "../worker/db/rows.js";
import { tasks } from "../worker/db/schema/tasks.js";
import { OutcomeLog } from "../worker/dispatch/outcomes.js";
import { FinishedRecords } from "../worker/shard-history/finished-records.js";
import { IssueCounts } from "../worker/shard-history/issue-counts.js";
import { issueMinutes } from "../worker/task-history/issue-minutes.js";
import { WEEK_MS } from "../worker/task-history/window.js";
import { HeldTasks } from "../worker/task-life/held-tasks.js";
import { sqlStorageOver } from "./lib/sql-storage-over-sqlite.js";
import { accounts, finishedRow, functions, shardDb, taskOf } from "./lib/shard-tasks.js";
import { percentile, printTable } from "./stats.js";

const { values } = parseArgs({ options: { tasks: { type: "string", default: "20000" }, rounds: { type: "string", default: "5" }, first: { type: "string", default: "900000" } } });
/** Issues of a shard's first count: an hour at a busy shard's 250 a second by default. */
const FIRST = Number(values.first);
const TASKS = Number(values.tasks);
const ROUNDS = Number(values.rounds);
const BATCH = 64;
const HOUR_MS = 3_600_000;

/** Per task, µs of the shard's storage work: accepted (held row, outcome logged), then committed in batches. */
function run(dir: string, name: string, keep: boolean, count = false): number {
  const db = shardDb(dir, name);
  const sql = sqlStorageOver(db);
  const held = new HeldTasks(sql);
  const outcomes = new OutcomeLog(sql);
  const history = new FinishedRecords(sql, HOUR_MS);
  const issues = new IssueCounts(sql, Date.now(), () => []);
  const tx = (fn: () => void) => {
    db.exec("begin");
    fn();
    db.exec("commit");
  };
  const t0 = performance.now();
  for (let b = 0; b < TASKS; b += BATCH) {
    const now = Date.now();
    const batch = Array.from({ length: Math.min(BATCH, TASKS - b) }, (_, i) => taskOf(b + i, now));
    for (const { row } of batch)
      tx(() => {
        held.add(row);
        if (count) issues.issued(row, now);
      });
    for (const { outcome } of batch) tx(() => outcomes.add(outcome));
    const ids = batch.map((t) => t.outcome.taskId);
    tx(() => {
      const rows = held.unrecorded(ids, Infinity);
      outcomes.remove(ids);
      held.committed(rows, ids);
      if (keep) history.keep(batch.map((t) => finishedRow(t.row, t.outcome)), now);
    });
  }
  const us = ((performance.now() - t0) * 1000) / TASKS;
  db.close();
  return us;
}

/** Bytes a record takes (table and indexes, dbstat) kept by the shard, and as D1's `tasks` row. */
function bytesPerRecord(dir: string): { shard: number; d1: number } {
  const now = Date.now();
  const rows = Array.from({ length: TASKS }, (_, i) => taskOf(i, now)).map((t) => finishedRow(t.row, t.outcome));
  const shard = shardDb(dir, "bytes-shard");
  const history = new FinishedRecords(sqlStorageOver(shard), HOUR_MS);
  shard.exec("begin");
  for (let i = 0; i < rows.length; i += BATCH) history.keep(rows.slice(i, i + BATCH), now);
  shard.exec("commit");
  const d1 = shardDb(dir, "bytes-d1");
  d1.exec("pragma foreign_keys = off");
  for (const f of fs.readdirSync("migrations").filter((f) => f.endsWith(".sql")).sort()) d1.exec(fs.readFileSync(path.join("migrations", f), "utf8"));
  const columns = Object.entries(getTableColumns(tasks));
  const insert = d1.prepare(`insert into tasks (${columns.map(([, c]) => c.name).join(", ")}) values (${columns.map(() => "?").join(", ")})`);
  const driverValue = (row: TaskRow, [field, c]: (typeof columns)[number]) => {
    const v = row[field as keyof TaskRow];
    return v == null ? null : (c.mapToDriverValue(v as never) as string | number);
  };
  d1.exec("begin");
  for (const row of rows) insert.run(...columns.map((c) => driverValue(row, c)));
  d1.exec("commit");
  const size = (db: DatabaseSync, table: string) =>
    Number((db.prepare("select sum(s.pgsize) as b from dbstat s join sqlite_schema m on m.name = s.name where m.tbl_name = ?").get(table) as { b: number }).b);
  const out = { shard: size(shard, "shard_record") / rows.length, d1: size(d1, "tasks") / rows.length };
  shard.close();
  d1.close();
  return out;
}

/**
 * Bytes an issue time takes (dbstat: tables and indexes), `TASKS` issues at `perSecond` over the
 * benchmark's 200 functions (a third through an endpoint, counted under both): in the shard's
 * hours and seconds, and in D1's minutes (task_archive_minutes, as the move kept them).
 */
function bytesPerIssue(dir: string, perSecond: number): { shard: number; d1: number } {
  const start = Date.now() - WEEK_MS / 2;
  const rows = Array.from({ length: TASKS }, (_, i) => ({ ...taskOf(i, start).row, issuedAt: start + Math.floor((i * 1000) / perSecond) }));
  const shard = shardDb(dir, `issues-shard-${perSecond}`);
  const counts = new IssueCounts(sqlStorageOver(shard), start, () => []);
  shard.exec("begin");
  for (const row of rows) counts.issued(row, start);
  shard.exec("commit");
  const d1 = shardDb(dir, `issues-d1-${perSecond}`);
  for (const f of fs.readdirSync("migrations").filter((f) => f.endsWith(".sql")).sort()) d1.exec(fs.readFileSync(path.join("migrations", f), "utf8"));
  const add = d1.prepare(`insert into task_archive_minutes (minute, scope, tasks, offsets) values (?, ?, ?, ?)
    on conflict (minute, scope) do update set tasks = tasks + excluded.tasks, offsets = offsets || ',' || excluded.offsets`);
  d1.exec("begin");
  // As the move adds them: a chunk's worth at a time.
  for (let i = 0; i < rows.length; i += 1000) for (const entry of issueMinutes(rows.slice(i, i + 1000), start)) add.run(...entry);
  d1.exec("commit");
  const size = (db: DatabaseSync, tables: string[]) =>
    tables.reduce((sum, t) => sum + Number((db.prepare("select sum(s.pgsize) as b from dbstat s join sqlite_schema m on m.name = s.name where m.tbl_name = ?").get(t) as { b: number | null }).b ?? 0), 0);
  const out = { shard: size(shard, ["shard_issue_hour", "shard_issue_second"]) / TASKS, d1: size(d1, ["task_archive_minutes"]) / TASKS };
  shard.close();
  d1.close();
  return out;
}

/**
 * A shard's first count of `FIRST` issues spread over the last hour (the constructor, which blocks
 * the shard's first request after the deploy), against the same issues counted as a running shard
 * counts them, one `issued` each, in one transaction (the baseline).
 */
function firstCount(dir: string): { first: number; oneByOne: number } {
  const now = Date.now();
  const issues = Array.from({ length: FIRST }, (_, i) => ({
    id: String(i), accountId: accounts[i % accounts.length]!, functionId: functions[i % functions.length]!, endpointId: i % 3 ? null : functions[(i + 1) % functions.length]!, issuedAt: now - HOUR_MS + Math.floor((i * HOUR_MS) / FIRST),
  }));
  const timed = (name: string, fn: (sql: ReturnType<typeof sqlStorageOver>) => void) => {
    const db = shardDb(dir, name);
    const t0 = performance.now();
    db.exec("begin");
    fn(sqlStorageOver(db));
    db.exec("commit");
    const ms = performance.now() - t0;
    db.close();
    return ms;
  };
  const oneByOne = timed("first-baseline", (sql) => {
    const counts = new IssueCounts(sql, now, () => []);
    for (const issue of issues) counts.issued(issue, now);
  });
  const first = timed("first-count", (sql) => new IssueCounts(sql, now, () => issues));
  return { first, oneByOne };
}

function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gcfaas-bench-shard-history-"));
  try {
    const base: number[] = [];
    const kept: number[] = [];
    const counted: number[] = [];
    run(dir, "warm", true, true);
    for (let r = 0; r < ROUNDS; r++) {
      base.push(run(dir, `base-${r}`, false));
      kept.push(run(dir, `kept-${r}`, true));
      counted.push(run(dir, `counted-${r}`, true, true));
    }
    const med = (s: number[]) => percentile(s, 50);
    printTable(`A shard's storage work per task, ${TASKS.toLocaleString("en")} tasks in batches of ${BATCH}, median of ${ROUNDS} rounds (node:sqlite, WAL, no fsync)`, ["", "µs a task", "tasks/s of one thread", "vs baseline"], [
      ["baseline: held row, outcome logged, committed", med(base).toFixed(1), Math.round(1e6 / med(base)).toLocaleString("en"), "1.00×"],
      ["with the finished record kept", med(kept).toFixed(1), Math.round(1e6 / med(kept)).toLocaleString("en"), `${(med(kept) / med(base)).toFixed(2)}×`],
      ["and each issue counted (step 3)", med(counted).toFixed(1), Math.round(1e6 / med(counted)).toLocaleString("en"), `${(med(counted) / med(base)).toFixed(2)}×`],
    ]);
    const bytes = bytesPerRecord(dir);
    printTable(`Bytes a finished record takes, ${TASKS.toLocaleString("en")} records (dbstat: table and indexes)`, ["", "B a record", "vs D1"], [
      ["D1's tasks row (baseline)", bytes.d1.toFixed(0), "1.00×"],
      ["the shard's compact record", bytes.shard.toFixed(0), `${(bytes.shard / bytes.d1).toFixed(2)}×`],
    ]);
    const rates = [250, 2.5].map((perSecond) => ({ perSecond, ...bytesPerIssue(dir, perSecond) }));
    printTable(`Bytes an issue time takes for the week's counts, ${TASKS.toLocaleString("en")} issues over 200 functions, a third through an endpoint (dbstat)`, ["issues a second", "D1's minutes (baseline)", "the shard's hours and seconds", "vs D1"], rates.map((r) => [
      String(r.perSecond), r.d1.toFixed(1), r.shard.toFixed(1), `${(r.shard / r.d1).toFixed(2)}×`,
    ]));
    const first = firstCount(dir);
    printTable(`A shard's first count of ${FIRST.toLocaleString("en")} issues of the last hour over 200 functions, a third through an endpoint (one transaction)`, ["", "ms in all", "µs an issue", "vs baseline"], [
      ["counted one by one as issued (baseline)", first.oneByOne.toFixed(0), ((first.oneByOne * 1000) / FIRST).toFixed(2), "1.00×"],
      ["the first count, added up in memory first", first.first.toFixed(0), ((first.first * 1000) / FIRST).toFixed(2), `${(first.first / first.oneByOne).toFixed(2)}×`],
    ]);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main();
