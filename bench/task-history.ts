/**
 * Task history at size (issue 27): what one task's record costs in D1, and how the reads people rely
 * on (task get, a function's task list, the account's usage, a function's and the account's task
 * metrics, the console's runs page) fare as the
 * history grows. The local D1 database is filled through the Worker's own write path — the shard's
 * row insert (worker/task-life/record-rows.ts) and the dispatcher's outcome batch (dispatch/records.ts), 64
 * outcomes a batch as in production — run over node:sqlite on the stopped Worker's database file,
 * then the Worker is started again on it and read over HTTP. Each size's figures stand next to the
 * small size's, and next to a bare route (/healthz), measured in the same run: the two sizes' Workers
 * run side by side and are read in turns, a call on one and the same call on the other. The outcome batch
 * meters each task by the update that finishes its row (migrations/0024), so a record leaves no
 * usage row: its bytes are those D1 holds while the record is in the window. Inputs, results and
 * logs stay inline (the 30-day retention, longer than the fill's spread, has not cleared them).
 *
 * Then the archive (worker/task-history/): the archive sweep, fired on the local Worker as if a day
 * and a half after the newest record, moves what is past its window and keeps the week's issue times
 * (their bytes, and the reads, are measured then); fired as if 16 days after, it moves every record to R2 chunks, and the same reads are measured again
 * on archived records, with the bytes a record then costs in D1 (its share of the chunk index and
 * the per-day counts) and in R2 (its share of the gzip chunks). `--no-archive` skips that phase.
 *
 * Run: npx tsx bench/task-history.ts [--records 5000000] [--small 10000] [--samples 200] [--accounts 10] [--no-archive]
 */
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";
import { gunzipSync } from "node:zlib";
import { LocalWorker, api } from "../test/e2e/harness.js";
import { d1File, sizeOptions, freshState as freshTenants, readLatencies, readsOf, type Tenant } from "./lib/history-reads.js";
import { openDb, sqlBatch, type Db } from "../worker/db/client.js";
import { functions } from "../worker/db/schema.js";
import { newTaskRow } from "../worker/task-life/new-row.js";
import { rowsInserted } from "../worker/task-life/record-rows.js";
import type { TaskRow } from "../worker/db/rows.js";
import { outcomesWritten } from "../worker/dispatch/records.js";
import type { Outcome } from "../worker/dispatch/outcomes.js";
import type { FunctionRow } from "../worker/db/rows.js";
import { newId } from "../worker/lib/ids.js";
import { d1OverSqlite } from "./lib/d1-over-sqlite.js";
import { ms, printTable, treeCpuByProgram } from "./stats.js";
import { ARCHIVE_CRON, SWEEP_CRON } from "../worker/crons.js";

const { values } = parseArgs({
  options: {
    ...sizeOptions,
    /** Skips the archive's phase: the figures of records kept in D1 only. */
    "no-archive": { type: "boolean", default: false },
  },
});
const RECORDS = Number(values.records);
const SMALL = Number(values.small);
const SAMPLES = Number(values.samples);
const ACCOUNTS = Number(values.accounts);
const FUNCTIONS_PER_ACCOUNT = 2;
/**
 * Tasks are spread over this much of the past, inside the current billing month where the day allows,
 * and short enough that the sweep fired 16 days after the newest (archiveAll) finds none past the
 * 30-day retention: the archived records keep their inputs, results and logs, as the live ones did.
 */
const DAY = 86_400_000;
const SPREAD_MS = Math.min(13, new Date().getUTCDate() - 1) * DAY + 3_600_000;

/** What an API call's task carries: curl's headers and a small JSON body, as most tasks do. */
const INPUT = {
  method: "POST",
  query: {},
  headers: { accept: "*/*", "content-type": "application/json", "user-agent": "curl/8.5.0", host: "api.example.com", "content-length": "17" },
  body: '{"order": 12345}',
};
const REPORT = { status: 200, headers: { "content-type": "application/json" }, body: btoa('{"ok":true,"order":12345}'), log: ["processing order 12345", "done"] };

/** R2 is never reached: the inputs, results and logs written here are all small enough to stay inline. */
const NO_BUCKET = new Proxy({}, { get: () => () => Promise.reject(new Error("the fill wrote to R2")) }) as R2Bucket;

/** Appends `count` finished tasks, spread over the tenants' functions, through the Worker's write path. */
async function fill(file: string, tenants: Tenant[], count: number, window: { from: number; to: number }): Promise<number> {
  const sqlite = new DatabaseSync(file);
  // The bench's own connection: the fill's durability is not what is measured.
  sqlite.exec("pragma synchronous = off");
  const db: Db = openDb({ DB: d1OverSqlite(sqlite) });
  const fns = new Map<string, FunctionRow>((await db.select().from(functions)).map((f) => [f.id, f]));
  const targets = tenants.flatMap((t) => t.functionIds.map((id) => ({ accountId: t.accountId, fn: fns.get(id)! })));
  const t0 = performance.now();
  const CHUNK = 64 * 16;
  for (let done = 0; done < count; ) {
    const n = Math.min(CHUNK, count - done);
    const issued: { id: string; accountId: string; functionId: string; at: number }[] = [];
    // Issue times rise through the fill, as real ones do, so ids stay in time order.
    const at = (i: number) => window.from + Math.floor(((done + i) / count) * (window.to - window.from));
    const rows: TaskRow[] = [];
    for (let i = 0; i < n; i++) {
      const target = targets[(done + i) % targets.length]!;
      const issuedAt = at(i);
      const id = newId(issuedAt);
      const o = { id, accountId: target.accountId, input: INPUT };
      rows.push(newTaskRow(o, { id, input: JSON.stringify(INPUT), inputKey: null }, issuedAt, target.fn, null as unknown as string));
      issued.push({ id, accountId: target.accountId, functionId: target.fn.id, at: issuedAt + 150 });
    }
    // As a shard's group commit writes them: batches of its rows, each statement within D1's limits.
    for (let i = 0; i < rows.length; i += 64) await sqlBatch(db, rowsInserted(rows.slice(i, i + 64)));
    for (let i = 0; i < issued.length; i += 64) {
      const slice = issued.slice(i, i + 64);
      const outcomes: Outcome[] = slice.map((t) => ({
        taskId: t.id, accountId: t.accountId, functionId: t.functionId, at: t.at, node: "bench-node", assignedAt: t.at - 120, rttMs: 2,
        report: { type: "task.done", taskId: t.id, ...REPORT, bodyUploaded: false, logUploaded: false, durationMs: 95, runtime: "runsc" },
      }));
      await outcomesWritten(db, NO_BUCKET, outcomes, slice[slice.length - 1]!.at);
    }
    done += n;
    if (done % (CHUNK * 100) === 0 || done === count) process.stdout.write(`  ${done.toLocaleString("en")} records written, ${(done / ((performance.now() - t0) / 1000)).toFixed(0)}/s\r`);
  }
  process.stdout.write("\n");
  sqlite.close();
  return performance.now() - t0;
}

/** Bytes in the database of `tasks` and `usage` (and the archive's index and counts), each table with its indexes, by dbstat. */
function bytesByTree(file: string): Map<string, number> {
  const sqlite = new DatabaseSync(file, { readOnly: true, timeout: 60_000 });
  const rows = sqlite
    .prepare("select s.name as name, sum(s.pgsize) as bytes from dbstat s join sqlite_schema m on m.name = s.name where m.tbl_name in ('tasks', 'usage', 'task_archive', 'task_archive_counts', 'task_archive_totals', 'task_archive_functions', 'task_archive_chains', 'task_archive_minutes') group by s.name order by bytes desc")
    .all() as { name: string; bytes: number }[];
  sqlite.close();
  return new Map(rows.map((r) => [r.name, r.bytes]));
}

/** One number a query of the database file answers. */
function countOf(file: string, query: string): number {
  const sqlite = new DatabaseSync(file, { readOnly: true, timeout: 60_000 });
  const n = (sqlite.prepare(query).get() as { n: number }).n;
  sqlite.close();
  return n;
}

/** The archive's chunks in R2 (their gzip bytes, from the index) and the records they hold. */
function archived(file: string): { bytes: number; records: number; chunks: number } {
  const sqlite = new DatabaseSync(file, { readOnly: true, timeout: 60_000 });
  const r = sqlite.prepare("select coalesce(sum(bytes), 0) as bytes, coalesce(sum(records), 0) as records, count(*) as chunks from task_archive").get() as { bytes: number; records: number; chunks: number };
  sqlite.close();
  return r;
}

/**
 * The archive sweep fired at `at`, again until it moves nothing more (a run moves at most about 450
 * chunks of 1,000 records); then the hourly sweep until it has pruned the issue times past the week.
 * 16 days after the newest record is past the archive's window (an hour), the 7 days a remainder short
 * of a full chunk waits, and the week of issue times.
 */
async function archiveAll(stateDir: string, at: number): Promise<{ runs: number; ms: number; perRun: RunCost[] }> {
  const file = await d1File(stateDir);
  const worker = await LocalWorker.create({ stateDir, testScheduled: true });
  const t0 = performance.now();
  let runs = 0;
  const perRun: RunCost[] = [];
  let chunksBefore = archived(file).chunks;
  try {
    for (let before = -1; ; runs++) {
      const now = archived(file).records;
      if (now === before) break;
      before = now;
      // workerd's CPU for the run: the Worker's own, and local D1's and R2's, which production runs elsewhere (an upper bound).
      const cpu0 = workerdCpuMs(worker);
      const w0 = performance.now();
      await worker.triggerCron(ARCHIVE_CRON, at);
      const after = archived(file);
      perRun.push({ chunks: after.chunks - chunksBefore, cpuMs: workerdCpuMs(worker) - cpu0, wallMs: performance.now() - w0 });
      chunksBefore = after.chunks;
      process.stdout.write(`  ${after.records.toLocaleString("en")} records archived\r`);
    }
    // One run prunes at most 1,000,000 minutes (issue-pruning.ts); fired until none is wholly past the week.
    const pastTheWeek = () => countOf(file, `select count(*) as n from task_archive_minutes where minute < ${at - 7 * DAY - 60_000}`);
    do await worker.triggerCron(SWEEP_CRON, at);
    while (pastTheWeek() > 0);
  } finally {
    await worker.stop();
  }
  process.stdout.write("\n");
  return { runs, ms: performance.now() - t0, perRun };
}

/**
 * The NDJSON characters a record of the archive takes (what the move encodes, and MOVE_MAX_CHARS
 * counts): one chunk's object decoded from local R2's files (gzip bodies), over its lines.
 */
async function ndjsonCharsARecord(stateDir: string): Promise<number | undefined> {
  for (const entry of await fs.readdir(stateDir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    const head = Buffer.alloc(2);
    const fd = await fs.open(file);
    try {
      await fd.read(head, 0, 2, 0);
    } finally {
      await fd.close();
    }
    if (head[0] !== 0x1f || head[1] !== 0x8b) continue;
    const text = gunzipSync(await fs.readFile(file)).toString("utf8");
    const lines = text.split("\n").filter(Boolean);
    if (lines.length >= 100 && lines[0]!.startsWith("{")) return (text.length - lines.length) / lines.length;
  }
  return undefined;
}

/** An archive sweep run: the chunks it moved, and what it took. */
interface RunCost {
  chunks: number;
  cpuMs: number;
  wallMs: number;
}
const workerdCpuMs = (w: LocalWorker) => treeCpuByProgram(w.child!.pid!).get("workerd") ?? 0;

interface Side {
  stateDir: string;
  tenant: Tenant;
  total: number;
}

interface Measured {
  total: number;
  trees: Map<string, number>;
  r2: ReturnType<typeof archived>;
  reads: Map<string, { p50: number; p95: number }>;
}

/** Each side's bytes, and its reads sampled in turns with the others' (readLatencies), every Worker up at once. */
async function measure<S extends Side[]>(...sides: S): Promise<{ [K in keyof S]: Measured }> {
  const workers: LocalWorker[] = [];
  try {
    const measured = [];
    for (const { stateDir, tenant, total } of sides) {
      const file = await d1File(stateDir);
      const worker = await LocalWorker.create({ stateDir });
      workers.push(worker);
      const ids = (await api(worker.url, tenant.token).json<{ id: string }[]>("GET", `/v1/task/list?functionId=${tenant.functionIds[1]}&limit=1000`, 200)).map((t) => t.id);
      measured.push({ total, trees: bytesByTree(file), r2: archived(file), worker, tenant, ids });
    }
    const reads = await readLatencies(measured.map((m) => readsOf(m.worker, m.tenant, m.ids)), SAMPLES);
    return measured.map(({ total, trees, r2 }, k) => ({ total, trees, r2, reads: reads[k]! })) as { [K in keyof S]: Measured };
  } finally {
    for (const w of workers) await w.stop();
  }
}

const freshState = () => freshTenants(ACCOUNTS, FUNCTIONS_PER_ACCOUNT);

async function main() {
  const { stateDir, tenants } = await freshState();
  const dirs = [stateDir];
  try {
    const file = await d1File(stateDir);
    // Issue times rise through the fills: the small history first, the rest after it, all inside the spread.
    const start = Date.now() - SPREAD_MS;
    const smallEnd = start + Math.floor(SPREAD_MS * (SMALL / RECORDS));
    const end = Date.now() - 60_000;
    const archive = !values["no-archive"];

    const smallMs = await fill(file, tenants, SMALL, { from: start, to: smallEnd });
    // The small size kept as it is, to be read beside the large one (in turns, the same minutes).
    const smallDir = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-history-"));
    dirs.push(smallDir);
    await fs.cp(stateDir, smallDir, { recursive: true });
    const bigMs = await fill(file, tenants, RECORDS - SMALL, { from: smallEnd, to: end });
    const [small, big] = await measure({ stateDir: smallDir, tenant: tenants[0]!, total: SMALL }, { stateDir, tenant: tenants[0]!, total: RECORDS });
    let smallArchived: Measured | undefined;
    let bigArchived: Measured | undefined;
    let moved: { runs: number; ms: number; perRun: RunCost[] } | undefined;
    let inWeek: { measured: Measured; issueTimes: number; minutes: number; records: number } | undefined;
    if (archive) {
      // A day and a half after the newest record: what is past the window moves (in full chunks), and
      // the records of the last 7 days keep their issue times for the week's counts.
      const first = await archiveAll(stateDir, end + 1.5 * DAY);
      const issueTimes = countOf(file, "select coalesce(sum(tasks), 0) as n from task_archive_minutes where scope in (select id from functions)");
      const minutes = countOf(file, "select count(*) as n from task_archive_minutes");
      inWeek = { measured: (await measure({ stateDir, tenant: tenants[0]!, total: RECORDS }))[0], issueTimes, minutes, records: archived(file).records };
      const rest = await archiveAll(stateDir, end + 16 * DAY);
      moved = { runs: first.runs + rest.runs, ms: first.ms + rest.ms, perRun: [...first.perRun, ...rest.perRun] };
      // The small size archived: a history of its own, filled and moved the same way.
      const other = await freshState();
      dirs.push(other.stateDir);
      const otherFile = await d1File(other.stateDir);
      await fill(otherFile, other.tenants, SMALL, { from: start, to: smallEnd });
      await archiveAll(other.stateDir, smallEnd + 16 * DAY);
      [smallArchived, bigArchived] = await measure({ stateDir: other.stateDir, tenant: other.tenants[0]!, total: SMALL }, { stateDir, tenant: tenants[0]!, total: RECORDS });
    }

    const perTask = (m: Measured, name?: string) => {
      const bytes = name ? (m.trees.get(name) ?? 0) : [...m.trees.values()].reduce((a, b) => a + b, 0);
      return (bytes / m.total).toFixed(name ? 1 : 0);
    };
    const byteTable = (title: string, a: Measured, b: Measured) =>
      printTable(
        title,
        ["tree", `at ${SMALL.toLocaleString("en")}`, `at ${RECORDS.toLocaleString("en")}`],
        [
          ...[...new Set([...a.trees.keys(), ...b.trees.keys()])].map((name) => [name, perTask(a, name), perTask(b, name)]),
          ["all of D1", perTask(a), perTask(b)],
          ...(a.r2.records || b.r2.records ? [["R2: archived chunks (gzip NDJSON)", (a.r2.bytes / Math.max(1, a.r2.records)).toFixed(0), (b.r2.bytes / Math.max(1, b.r2.records)).toFixed(0)]] : []),
        ],
      );
    const readTable = (title: string, a: Measured, b: Measured, labels = [`at ${SMALL.toLocaleString("en")}`, `at ${RECORDS.toLocaleString("en")}`]) =>
      printTable(
        title,
        ["read", `p50 ${labels[0]}`, `p95`, `p50 ${labels[1]}`, "p95", "p50 ratio"],
        [...b.reads.keys()].map((name) => {
          const s = a.reads.get(name)!;
          const l = b.reads.get(name)!;
          return [name, ms(s.p50), ms(s.p95), ms(l.p50), ms(l.p95), (l.p50 / s.p50).toFixed(2) + "×"];
        }),
      );
    byteTable(`Bytes per task record in D1 (dbstat: pages of each table and index, over the records), ${SMALL.toLocaleString("en")} and ${RECORDS.toLocaleString("en")} records, all in D1`, small, big);
    readTable(`Reads of one account's records (one of ${ACCOUNTS} accounts, ${SAMPLES} sequential calls each), local Worker, records in D1`, small, big);
    if (smallArchived && bigArchived && moved) {
      byteTable("Bytes per task record once archived: D1 keeps the chunk index and per-day counts, R2 the chunks", smallArchived, bigArchived);
      readTable("The same reads, every record archived (the first page of a list, the task gets and the console read chunks from R2)", smallArchived, bigArchived);
      if (inWeek) {
        const bytes = [...inWeek.measured.trees].filter(([name]) => name.startsWith("task_archive_minutes")).reduce((a, [, b]) => a + b, 0);
        console.log(`\nThe week's issue times, archived a day and a half after the newest record: ${inWeek.records.toLocaleString("en")} records archived, ${inWeek.issueTimes.toLocaleString("en")} issue times kept in ${inWeek.minutes.toLocaleString("en")} rows of a function's minute, ${(bytes / Math.max(1, inWeek.issueTimes)).toFixed(1)} B each (table and indexes, dbstat), against ${perTask(big)} B a record all in D1.`);
        // One state before the other, so not read in turns: the bare route's ratio says how far the machine moved in between.
        readTable(`The same reads at ${RECORDS.toLocaleString("en")}: all in D1, then archived with the week's issue times kept (function get counts through them); read minutes apart, not in turns, so divide by the bare route's ratio`, big, inWeek.measured, ["all in D1", "archived, in the week"]);
      }
      console.log(`\nArchive: ${bigArchived.r2.records.toLocaleString("en")} records in ${bigArchived.r2.chunks.toLocaleString("en")} chunks, moved by ${moved.runs} sweep runs in ${(moved.ms / 1000).toFixed(1)} s (${(RECORDS / (moved.ms / 1000)).toFixed(0)} records/s).`);
      // What one archive sweep run costs at its fullest: its workerd CPU (the Worker's own and local D1's and R2's) against a scheduled invocation's CPU limit.
      const fullest = moved.perRun.reduce((a, b) => (b.chunks > a.chunks ? b : a), { chunks: 0, cpuMs: 0, wallMs: 0 });
      const busy = moved.perRun.filter((r) => r.chunks > 0);
      const cpuPerChunk = busy.reduce((n, r) => n + r.cpuMs, 0) / Math.max(1, busy.reduce((n, r) => n + r.chunks, 0));
      const chars = await ndjsonCharsARecord(stateDir);
      if (chars) console.log(`NDJSON a record: ${chars.toFixed(0)} characters; the fullest run encoded ~${((fullest.chunks * 1000 * chars) / 1e6).toFixed(0)} million, ${(fullest.cpuMs / ((fullest.chunks * 1000 * chars) / 1e6)).toFixed(0)} ms of workerd CPU a million.`);
      console.log(`Archive sweep runs: the fullest moved ${fullest.chunks} chunks in ${(fullest.wallMs / 1000).toFixed(1)} s, workerd CPU ${(fullest.cpuMs / 1000).toFixed(1)} s; ${cpuPerChunk.toFixed(0)} ms of workerd CPU a chunk over every run that moved one; chunks a run: ${moved.perRun.map((r) => r.chunks).join(", ")}.`);
    }
    console.log(`\nUsage rows left by the fill (a task's outcome writes none): ${countOf(file, "select count(*) as n from usage").toLocaleString("en")}.`);
    console.log(`Fill rate through the write path: ${(SMALL / (smallMs / 1000)).toFixed(0)} and ${((RECORDS - SMALL) / (bigMs / 1000)).toFixed(0)} records/s; database file ${((await fs.stat(file)).size / 1e9).toFixed(2)} GB.`);
  } finally {
    for (const dir of dirs) await fs.rm(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
