/**
 * Rowless tasks (issue 27, step 4; TASK_ROWS = "shard", task-life/held-tasks.ts): what D1 does for
 * the records of 64 tasks when each has a row there (TASK_ROWS = "d1", the baseline: the row's
 * insert and its outcome's update in the shard's batch, then the release that takes the row out of
 * D1 once the shard archived it, shard-history/release.ts) against a rowless shard's batch, which
 * carries only the sums of its accounts (shard-metering/) and the read of the functions' triggers.
 * Both run the Worker's own statements over node:sqlite on a database migrated as D1 is, in turns,
 * with 64 tasks of one account and 64 tasks of 64 accounts. The release is timed apart, for every
 * 1,024 records (its batches take up to 1,000), and given a task.
 *
 * Run: npx tsx bench/rowless-tasks.ts [--rounds 300]
 */
import { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";
import { openDb, type Db } from "../worker/db/client.js";
import { rowsInserted } from "../worker/task-life/record-rows.js";
import { outcomesWritten, type OutcomeElement } from "../worker/dispatch/records.js";
import { finishedRow } from "../worker/task-life/finished-row.js";
import type { Outcome } from "../worker/dispatch/outcomes.js";
import { newId } from "../worker/lib/ids.js";
import { ShardMeters } from "../worker/shard-metering/shard-meters.js";
import { releaseFromD1, type Released } from "../worker/shard-history/release.js";
import { d1OverSqlite } from "./lib/d1-over-sqlite.js";
import { migratedSqlite } from "./lib/migrated-sqlite.js";
import { benchAccounts, benchRow, NO_BUCKET } from "./lib/batch-fixtures.js";
import { sqlStorageOver } from "./lib/sql-storage-over-sqlite.js";
import { percentile, printTable } from "./stats.js";

const { values } = parseArgs({ options: { rounds: { type: "string", default: "300" } } });
const ROUNDS = Number(values.rounds);
const BATCH = 64;
const RELEASE_EVERY = 1_024;

const sqlite = migratedSqlite("gcfaas-rowless-");
const db: Db = openDb({ DB: d1OverSqlite(sqlite) });
const meters = new ShardMeters(sqlStorageOver(new DatabaseSync(":memory:")), "bench-shard");
const ACCOUNTS = benchAccounts(sqlite, BATCH);

type Mode = "a row in D1 (baseline)" | "rowless";
const released: Released[] = [];
const releaseMs: number[] = [];

/** One round: 64 tasks created and finished in the shard, then the batch that records them: D1's time. */
async function round(mode: Mode, accounts: number): Promise<number> {
  const at = Date.now();
  const rows = Array.from({ length: BATCH }, (_, i) => benchRow(newId(at), ACCOUNTS[i % accounts]!, at));
  const created = new Map(rows.map((r) => [r.id, r]));
  const batch: Outcome[] = rows.map((r) => ({
    taskId: r.id, accountId: r.accountId, functionId: r.functionId, at: at + 100, node: "bench-node", assignedAt: at + 5, rttMs: 1,
    report: { type: "task.done", taskId: r.id, status: 200, headers: {}, body: btoa('{"ok":true}'), bodyUploaded: false, log: ["done"], logUploaded: false, durationMs: 95 },
  }));
  const m = meters.forBatch(batch, (id) => created.get(id), () => batch, at);
  const finishedOf = (e: OutcomeElement) => finishedRow(created.get(e.id)!, e);
  const rowless = mode === "rowless" ? new Set(created.keys()) : undefined;
  const t0 = performance.now();
  // The rows ride in the batch of their outcomes, as a shard's group commit sends them when both are due.
  const written = await outcomesWritten(db, NO_BUCKET, batch, at, {
    ...(rowless ? { rowless } : { rows: rowsInserted(rows) }), after: m.statements, meteredHere: m.here, finishedOf,
  });
  const took = performance.now() - t0;
  m.committed();
  if (written.finished.size !== BATCH) throw new Error(`${mode}: ${written.finished.size} of ${BATCH} outcomes finished their tasks`);
  if (!rowless) {
    released.push(...rows.map((r) => ({ id: r.id, accountId: r.accountId, purged: false })));
    if (released.length >= RELEASE_EVERY) {
      const t1 = performance.now();
      await releaseFromD1(db, released.splice(0), at);
      releaseMs.push(performance.now() - t1);
    }
  }
  return took;
}

const modes: Mode[] = ["a row in D1 (baseline)", "rowless"];
const results: (string | number)[][] = [];
const us = (msValue: number) => `${(msValue * 1000).toFixed(0)} µs`;
for (const accounts of [1, BATCH]) {
  const times = new Map<Mode, number[]>(modes.map((m) => [m, []]));
  for (let i = 0; i < 20; i++) for (const m of modes) await round(m, accounts); // warm-up
  releaseMs.length = 0;
  for (let i = 0; i < ROUNDS; i++) for (const m of modes.map((_, k) => modes[(k + i) % modes.length]!)) times.get(m)!.push(await round(m, accounts));
  const base = percentile(times.get(modes[0]!)!, 50);
  const releasePerTask = releaseMs.length ? percentile(releaseMs, 50) / RELEASE_EVERY : 0;
  for (const m of modes) {
    const d1 = times.get(m)!;
    const p50 = percentile(d1, 50);
    const perTask = p50 / BATCH + (m === "rowless" ? 0 : releasePerTask);
    results.push([`${accounts} account${accounts > 1 ? "s" : ""}`, m, us(p50), us(percentile(d1, 95)), `${(p50 / base).toFixed(2)}×`, m === "rowless" ? "none" : `${us(releasePerTask)} a task`, `${(perTask * 1000).toFixed(1)} µs`]);
  }
}
printTable(
  `The D1 work of ${BATCH} tasks' records (node:sqlite, no fsync), median of ${ROUNDS} rounds each, in turns`,
  ["batch of", "layout", "D1 p50 a batch", "D1 p95 a batch", "batch vs baseline", "release (p50 of 1,024, a task)", "D1 a task, all"],
  results,
);

// Every task metered once either way, and no row of a rowless task in D1.
const n = (q: string) => (sqlite.prepare(q).get() as { n: number }).n;
const metered = n("select sum(invocations) as n from usage_totals");
const expected = (20 + ROUNDS) * modes.length * 2 * BATCH;
console.log(`\nusage_totals: ${metered.toLocaleString("en")} invocations for ${expected.toLocaleString("en")} tasks${metered === expected ? " (each once)" : " — MISMATCH"}`);
console.log(`rows left in D1's tasks: ${n("select count(*) as n from tasks")} (the baseline's last ${released.length} not yet released; rowless ones: none written)`);
if (metered !== expected || n("select count(*) as n from tasks") !== released.length) process.exitCode = 1;
