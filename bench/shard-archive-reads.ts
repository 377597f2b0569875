/**
 * Task history at size in a shard's own archive (issue 27, step 5 of the shard-resident history,
 * docs/dispatch.md): the reads people rely on (task get, a function's task list, the account's
 * usage, the console's runs page) over 5,000,000 records that only the dispatcher shard's archive
 * holds, each next to the same read over 10,000, and next to a bare route, measured in the same run
 * (the two sizes' Workers side by side, read in turns: lib/history-reads.ts).
 *
 * The history is filled through the shard's own write path, run over node:sqlite on the stopped
 * Worker's Durable Object file and Miniflare's local R2 on its bucket's files: the finished records
 * kept as a group commit keeps them (`FinishedRecords.keep`, 64 a batch), and the archive's turn as
 * the shard's alarm takes it on the records' own clock (`ShardArchive.roll`, `releaseArchived`), so
 * each chunk is cut where a shard at this rate cuts it and the kept records leave at the window's
 * end. D1 never had these records' rows (its side is bench/task-history.ts), so the release has
 * nothing to let go and counts nothing: the function's and account's metrics, which add D1's
 * totals, are not read here. The wrangler.toml default of one shard: every record in one shard's
 * archive, its index at its largest.
 *
 * Run: npx tsx bench/shard-archive-reads.ts [--records 5000000] [--small 10000] [--samples 200] [--accounts 10]
 */
import fs from "node:fs/promises";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";
import { Miniflare } from "miniflare";
import { LocalWorker, api } from "../test/e2e/harness.js";
import { newTaskId } from "../worker/dispatch/client.js";
import { openDb } from "../worker/db/client.js";
import type { FunctionRow, TaskRow } from "../worker/db/rows.js";
import { functions } from "../worker/db/schema.js";
import type { Bindings } from "../worker/env.js";
import { ShardArchive } from "../worker/shard-history/archive.js";
import { FinishedRecords } from "../worker/shard-history/finished-records.js";
import { newId } from "../worker/lib/ids.js";
import { newTaskRow } from "../worker/task-life/new-row.js";
import { d1OverSqlite } from "./lib/d1-over-sqlite.js";
import { d1File, sizeOptions, freshState, onlyFile, readLatencies, readsOf, type Tenant } from "./lib/history-reads.js";
import { finishedRow, transactionOver } from "./lib/shard-tasks.js";
import { sqlStorageOver } from "./lib/sql-storage-over-sqlite.js";
import { ms, printTable } from "./stats.js";

const { values } = parseArgs({
  options: {
    ...sizeOptions,
  },
});
const RECORDS = Number(values.records);
const SMALL = Number(values.small);
const SAMPLES = Number(values.samples);
const ACCOUNTS = Number(values.accounts);
const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Inside retention (30 days), so the archive's records keep their payloads, as bench/task-history.ts's do. */
const SPREAD_MS = 13 * DAY + HOUR;
/** The reads measured: what D1's totals and the shards' issue counts answer (not filled here) are left out. */
const MEASURED = new Set(["bare /healthz (baseline)", "task get", "a function's task list (first page)", "the account's usage", "the console's runs page"]);
const ENV = { DISPATCH_SHARDS: "1" } as Bindings;

const dispatcherFile = (stateDir: string) => onlyFile(path.join(stateDir, "v3", "do", "gc-faas-Dispatcher"));

/**
 * Appends `count` finished records to the shard's history, issue times rising through `window`, and
 * runs the archive's turn as the alarm would on the records' clock. Returns the ids of the first
 * tenant's first function, every `stride`-th (the task gets' sample).
 */
async function fill(stateDir: string, tenants: Tenant[], count: number, window: { from: number; to: number }, stride: number): Promise<{ ms: number; sample: string[] }> {
  const file = await dispatcherFile(stateDir);
  const d1 = new DatabaseSync(await d1File(stateDir), { readOnly: true });
  const fns = new Map<string, FunctionRow>((await openDb({ DB: d1OverSqlite(d1) }).select().from(functions)).map((f) => [f.id, f]));
  d1.close();
  const targets = tenants.flatMap((t) => t.functionIds.map((id) => fns.get(id)!));
  const sqlite = new DatabaseSync(file);
  // The bench's own connection: a Durable Object's storage makes writes durable its own way.
  sqlite.exec("pragma synchronous = off");
  const sql = sqlStorageOver(sqlite);
  const tx = transactionOver(sqlite);
  const mf = new Miniflare({ modules: true, script: "export default { fetch() { return new Response(null) } }", r2Buckets: { BUCKET: "gc-faas" }, r2Persist: path.join(stateDir, "v3", "r2") });
  const sample: string[] = [];
  const t0 = performance.now();
  try {
    const bucket = (await mf.getR2Bucket("BUCKET")) as unknown as R2Bucket;
    const records = new FinishedRecords(sql, HOUR);
    // D1 holds none of these rows: the release lets go of nothing, as D1 would answer for rows it lacks.
    const archive = new ShardArchive(sql, tx, bucket, path.basename(file, ".sqlite"), records, 30 * DAY, async () => undefined);
    let clock = window.from;
    for (let done = 0; done < count; ) {
      const rows: TaskRow[] = [];
      for (let i = 0; i < 64 && done < count; i++, done++) {
        const fn = targets[done % targets.length]!;
        const issuedAt = window.from + Math.floor((done / count) * (window.to - window.from));
        const id = newTaskId(ENV, fn.id, issuedAt);
        const input = { method: "POST", query: {}, headers: { "content-type": "application/json" }, body: `{"order": ${done}}` };
        const row = newTaskRow({ id, accountId: fn.accountId, input }, { id, input: JSON.stringify(input), inputKey: null }, issuedAt, fn, newId(issuedAt - DAY));
        rows.push(finishedRow(row, { taskId: id, accountId: fn.accountId, functionId: fn.id, at: issuedAt + 150, node: "bench-node", assignedAt: issuedAt + 30, rttMs: 2, report: null }));
        if (fn.id === targets[0]!.id && (done / targets.length) % stride === 0) sample.push(id);
      }
      clock = rows.at(-1)!.finishedAt!;
      tx(() => records.keep(rows, clock));
      // The alarm's turn: a roll when a full chunk waits or the oldest waited ROLL_MS, then the release.
      if (await archive.roll(clock)) await archive.releaseArchived();
      if (done % 102_400 === 0 || done === count) process.stdout.write(`  ${done.toLocaleString("en")} records written, ${(done / ((performance.now() - t0) / 1000)).toFixed(0)}/s\r`);
    }
    // The last records' turn comes as the shard's would, ROLL_MS after their finish.
    while (await archive.roll(clock + 3_600_000)) await archive.releaseArchived();
    // And the window's end as a shard's next commit now would see it: only the last hour stays kept.
    while (tx(() => records.prune(Date.now())));
    process.stdout.write("\n");
  } finally {
    await mf.dispose();
    sqlite.close();
  }
  return { ms: performance.now() - t0, sample };
}

interface Measured {
  total: number;
  bytes: { kept: number; index: number; r2: number; chunks: number; d1Tasks: number };
  reads: Map<string, { p50: number; p95: number }>;
}

/** The shard's bytes (dbstat) and its chunks' in R2 (the index's `bytes`), and D1's task rows. */
async function bytesOf(stateDir: string) {
  const shard = new DatabaseSync(await dispatcherFile(stateDir), { readOnly: true });
  const size = (...tables: string[]) =>
    tables.reduce((sum, t) => sum + Number((shard.prepare("select coalesce(sum(s.pgsize), 0) as b from dbstat s join sqlite_schema m on m.name = s.name where m.tbl_name = ?").get(t) as { b: number }).b), 0);
  const chunks = shard.prepare("select count(*) as n, coalesce(sum(bytes), 0) as b from shard_chunk").get() as { n: number; b: number };
  const out = { kept: size("shard_record"), index: size("shard_chunk", "shard_chunk_member"), r2: Number(chunks.b), chunks: Number(chunks.n) };
  shard.close();
  const d1 = new DatabaseSync(await d1File(stateDir), { readOnly: true });
  const d1Tasks = Number((d1.prepare("select count(*) as n from tasks").get() as { n: number }).n);
  d1.close();
  return { ...out, d1Tasks };
}

async function measure(sides: { stateDir: string; tenant: Tenant; total: number; ids: string[] }[]): Promise<Measured[]> {
  const workers: LocalWorker[] = [];
  try {
    const bytes: Measured["bytes"][] = [];
    for (const side of sides) {
      bytes.push(await bytesOf(side.stateDir));
      workers.push(await LocalWorker.create({ stateDir: side.stateDir }));
    }
    // Every sampled id answers, and a function's first page is full: the archive holds what the fill wrote.
    for (const [k, side] of sides.entries()) {
      const user = api(workers[k]!.url, side.tenant.token);
      for (const id of side.ids) await user.json("GET", `/v1/task/${id}`, 200);
      const page = await user.json<unknown[]>("GET", `/v1/task/list?functionId=${side.tenant.functionIds[0]}`, 200);
      if (!page.length) throw new Error("a function's first page is empty");
    }
    const reads = await readLatencies(
      sides.map((s, k) => readsOf(workers[k]!, s.tenant, s.ids).filter(([name]) => MEASURED.has(name))),
      SAMPLES,
    );
    return sides.map((s, k) => ({ total: s.total, bytes: bytes[k]!, reads: reads[k]! }));
  } finally {
    for (const w of workers) await w.stop();
  }
}

async function main() {
  const { stateDir, tenants } = await freshState(ACCOUNTS, 2);
  const dirs = [stateDir];
  try {
    const start = Date.now() - SPREAD_MS;
    const smallEnd = start + Math.floor(SPREAD_MS * (SMALL / RECORDS));
    const end = Date.now() - 60_000;
    // About 200 sampled ids a side, spread over its whole history (one function's records).
    const perFunction = (n: number) => Math.max(1, Math.floor(n / (ACCOUNTS * 2) / 200));
    const small = await fill(stateDir, tenants, SMALL, { from: start, to: smallEnd }, perFunction(SMALL));
    const smallDir = await fs.mkdtemp(`${stateDir}-small-`);
    dirs.push(smallDir);
    await fs.cp(stateDir, smallDir, { recursive: true });
    const big = await fill(stateDir, tenants, RECORDS - SMALL, { from: smallEnd, to: end }, perFunction(RECORDS));
    const bigIds = [...small.sample.filter((_, i) => i % Math.max(1, Math.round(RECORDS / SMALL)) === 0), ...big.sample];
    const [a, b] = await measure([
      { stateDir: smallDir, tenant: tenants[0]!, total: SMALL, ids: small.sample },
      { stateDir, tenant: tenants[0]!, total: RECORDS, ids: bigIds },
    ]);
    const per = (m: Measured, n: number) => (n / m.total).toFixed(1);
    const sizes = [`at ${SMALL.toLocaleString("en")}`, `at ${RECORDS.toLocaleString("en")}`];
    printTable(`Bytes per task record, every record in the shard's archive (dbstat of the shard's SQLite; R2 from the chunks' index)`, ["where", ...sizes], [
      ["the shard's kept records (the last hour's, archived and released)", per(a!, a!.bytes.kept), per(b!, b!.bytes.kept)],
      ["the shard's archive index (chunks and their sidecars)", per(a!, a!.bytes.index), per(b!, b!.bytes.index)],
      ["R2: the shard's chunks (gzip NDJSON)", per(a!, a!.bytes.r2), per(b!, b!.bytes.r2)],
      ["D1: task rows", String(a!.bytes.d1Tasks), String(b!.bytes.d1Tasks)],
      ["chunks", String(a!.bytes.chunks), String(b!.bytes.chunks)],
    ]);
    printTable(
      `Reads of one account's records (one of ${ACCOUNTS} accounts, ${SAMPLES} sequential calls each, task gets over ids spread across the history), local Worker, records in the shard's archive`,
      ["read", `p50 ${sizes[0]}`, "p95", `p50 ${sizes[1]}`, "p95", "p50 ratio"],
      [...b!.reads.keys()].map((name) => {
        const s = a!.reads.get(name)!;
        const l = b!.reads.get(name)!;
        return [name, ms(s.p50), ms(s.p95), ms(l.p50), ms(l.p95), (l.p50 / s.p50).toFixed(2) + "×"];
      }),
    );
    console.log(`\nFill through the shard's write path: ${(SMALL / (small.ms / 1000)).toFixed(0)} and ${((RECORDS - SMALL) / (big.ms / 1000)).toFixed(0)} records/s.`);
  } finally {
    for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
