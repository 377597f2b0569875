/**
 * Metering in the shard (issue 27, step 4; worker/shard-metering/): what D1 does for one outcome
 * batch of 64 tasks when the update that finishes each row meters it (`tasks_metered`, migration
 * 0024: the baseline, and the path of tasks a shard does not hold) against the shard's absolute sums
 * (migration 0034: one `shard_usage` row an account and period, the update inside
 * `metering_in_shard`'s row), and with the finished rows built by the shard from the tasks it holds
 * (task-life/finished-row.ts), D1 answering only their ids rather than sending the rows back. All
 * run the Worker's own statements (dispatch/records.ts, shard-metering/) over node:sqlite on a
 * database migrated as D1 is, in turns, with 64 tasks of one account and 64 tasks of 64 accounts
 * (one row each: the sums' worst case). Only the outcome batch is timed; each round's rows are
 * inserted before it.
 *
 * Run: npx tsx bench/shard-metering.ts [--rounds 300]
 */
import { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";
import { openDb, sqlBatch, type Db } from "../worker/db/client.js";
import { rowsInserted } from "../worker/task-life/record-rows.js";
import { outcomesWritten, type OutcomeElement } from "../worker/dispatch/records.js";
import { finishedRow } from "../worker/task-life/finished-row.js";
import type { Outcome } from "../worker/dispatch/outcomes.js";
import { newId } from "../worker/lib/ids.js";
import { ShardMeters } from "../worker/shard-metering/shard-meters.js";
import { d1OverSqlite } from "./lib/d1-over-sqlite.js";
import { migratedSqlite } from "./lib/migrated-sqlite.js";
import { benchAccounts, benchRow, NO_BUCKET } from "./lib/batch-fixtures.js";
import { sqlStorageOver } from "./lib/sql-storage-over-sqlite.js";
import { percentile, printTable } from "./stats.js";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "300" } } });
const ROUNDS = Number(values.rounds);
const BATCH = 64;

const sqlite = migratedSqlite("gcfaas-metering-");
const db: Db = openDb({ DB: d1OverSqlite(sqlite) });
const meters = new ShardMeters(sqlStorageOver(new DatabaseSync(":memory:")), "bench-shard");
const ACCOUNTS = benchAccounts(sqlite, BATCH);

type Mode = "update meters each row (baseline)" | "shard's sums" | "shard's sums, rows built by the shard";

/** One round: 64 rows recorded unfinished (untimed), then their outcomes' batch: D1's time, and the shard's own (its sums built and kept). */
async function round(mode: Mode, accounts: number): Promise<{ d1: number; shard: number }> {
  const at = Date.now();
  const rows = Array.from({ length: BATCH }, (_, i) => benchRow(newId(at), ACCOUNTS[i % accounts]!, at));
  await sqlBatch(db, rowsInserted(rows));
  const batch: Outcome[] = rows.map((r) => ({
    taskId: r.id, accountId: r.accountId, functionId: r.functionId, at: at + 100, node: "bench-node", assignedAt: at + 5, rttMs: 1,
    report: { type: "task.done", taskId: r.id, status: 200, headers: {}, body: btoa('{"ok":true}'), bodyUploaded: false, log: ["done"], logUploaded: false, durationMs: 95 },
  }));
  if (mode !== "update meters each row (baseline)") {
    const created = new Map(rows.map((r) => [r.id, r]));
    const t0 = performance.now();
    const m = meters.forBatch(batch, (id) => created.get(id), () => batch, at);
    const finishedOf = mode === "shard's sums" ? undefined : (e: OutcomeElement) => finishedRow(created.get(e.id)!, e);
    const t1 = performance.now();
    await outcomesWritten(db, NO_BUCKET, batch, at, { after: m.statements, meteredHere: m.here, ...(finishedOf ? { finishedOf } : {}) });
    const t2 = performance.now();
    m.committed();
    return { d1: t2 - t1, shard: t1 - t0 + (performance.now() - t2) };
  }
  const t0 = performance.now();
  await outcomesWritten(db, NO_BUCKET, batch, at);
  return { d1: performance.now() - t0, shard: 0 };
}

const modes: Mode[] = ["update meters each row (baseline)", "shard's sums", "shard's sums, rows built by the shard"];
const results: (string | number)[][] = [];
const us = (msValue: number) => `${(msValue * 1000).toFixed(0)} µs`;
for (const accounts of [1, BATCH]) {
  const times = new Map<Mode, { d1: number[]; shard: number[] }>(modes.map((m) => [m, { d1: [], shard: [] }]));
  for (let i = 0; i < 20; i++) for (const m of modes) await round(m, accounts); // warm-up
  for (let i = 0; i < ROUNDS; i++)
    for (const m of modes.map((_, k) => modes[(k + i) % modes.length]!)) {
      const t = await round(m, accounts);
      times.get(m)!.d1.push(t.d1);
      times.get(m)!.shard.push(t.shard);
    }
  const base = percentile(times.get(modes[0]!)!.d1, 50);
  for (const m of modes) {
    const { d1, shard } = times.get(m)!;
    const p50 = percentile(d1, 50);
    results.push([`${accounts} account${accounts > 1 ? "s" : ""}`, m, us(p50), `${((p50 * 1000) / BATCH).toFixed(1)} µs`, us(percentile(d1, 95)), `${(p50 / base).toFixed(2)}×`, us(percentile(shard, 50))]);
  }
}
printTable(`One outcome batch of ${BATCH} tasks (node:sqlite, no fsync), median of ${ROUNDS} rounds each, in turns`, ["batch of", "metering", "D1 p50 a batch", "D1 p50 a task", "D1 p95 a batch", "D1 vs baseline", "shard's own p50 a batch"], results);

// Every task metered once, whichever way: the sums and the update add up to the tasks run.
const metered = (sqlite.prepare("select sum(invocations) as n from usage_totals").get() as { n: number }).n;
const tasks = (sqlite.prepare("select count(*) as n from tasks where finished_at is not null").get() as { n: number }).n;
console.log(`\nusage_totals: ${metered.toLocaleString("en")} invocations for ${tasks.toLocaleString("en")} finished tasks${metered === tasks ? " (each once)" : " — MISMATCH"}`);
const rowsOf = (q: string) => (sqlite.prepare(q).get() as { n: number }).n;
console.log(`shard_usage rows: ${rowsOf("select count(*) as n from shard_usage")}, metering_in_shard rows left: ${rowsOf("select count(*) as n from metering_in_shard")}`);
if (metered !== tasks) process.exitCode = 1;
