/**
 * What a shard's own archive costs (step 5 of the shard-resident history, docs/dispatch.md): the
 * roll that puts its finished records into R2 chunks and indexes them in its SQLite, per record,
 * against keeping the same records (step 1's `FinishedRecords.keep`, in batches of 64 as a group
 * commit keeps them) measured in the same run; and the bytes an archived record leaves: in the
 * shard's index (chunks and their sidecars, dbstat) and in R2, against the kept record's.
 * The shard's classes over node:sqlite (no fsync), and R2 as Miniflare's local bucket.
 * Run: npx tsx bench/shard-archive.ts [--records 20000] [--rounds 5]
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { DatabaseSync } from "node:sqlite";
import { parseArgs } from "node:util";
import { Miniflare } from "miniflare";
import type { TaskRow } from "../worker/db/rows.js";
import { ShardArchive, ROLL_MS } from "../worker/shard-history/archive.js";
import { FinishedRecords } from "../worker/shard-history/finished-records.js";
import { sqlStorageOver } from "./lib/sql-storage-over-sqlite.js";
import { finishedRow, shardDb, taskOf, transactionOver } from "./lib/shard-tasks.js";
import { percentile, printTable } from "./stats.js";

const { values } = parseArgs({ options: { records: { type: "string", default: "20000" }, rounds: { type: "string", default: "5" } } });
const RECORDS = Number(values.records);
const ROUNDS = Number(values.rounds);
const BATCH = 64;
const HOUR_MS = 3_600_000;

const size = (db: DatabaseSync, ...tables: string[]) =>
  tables.reduce((sum, t) => sum + Number((db.prepare("select coalesce(sum(s.pgsize), 0) as b from dbstat s join sqlite_schema m on m.name = s.name where m.tbl_name = ?").get(t) as { b: number }).b), 0);

async function round(dir: string, name: string, bucket: R2Bucket) {
  const now = Date.now();
  const rows: TaskRow[] = Array.from({ length: RECORDS }, (_, i) => taskOf(i, now)).map((t) => finishedRow(t.row, t.outcome));
  const db = shardDb(dir, name);
  const sql = sqlStorageOver(db);
  const tx = transactionOver(db);
  const records = new FinishedRecords(sql, HOUR_MS);
  const archive = new ShardArchive(sql, tx, bucket, name, records, 30 * 24 * HOUR_MS, async () => undefined);
  let t0 = performance.now();
  for (let i = 0; i < rows.length; i += BATCH) tx(() => records.keep(rows.slice(i, i + BATCH), now));
  const keepUs = ((performance.now() - t0) * 1000) / RECORDS;
  const keptBytes = size(db, "shard_record") / RECORDS;
  t0 = performance.now();
  let archived = 0;
  for (let n; (n = await archive.roll(now + ROLL_MS + 1)); ) archived += n;
  const rollUs = ((performance.now() - t0) * 1000) / RECORDS;
  if (archived !== RECORDS) throw new Error(`the roll archived ${archived} of ${RECORDS} records`);
  const indexBytes = size(db, "shard_chunk", "shard_chunk_member") / RECORDS;
  let r2Bytes = 0;
  for (let cursor: string | undefined, more = true; more; ) {
    const listed = await bucket.list({ prefix: `shard-history/${name}/`, cursor });
    for (const o of listed.objects) r2Bytes += o.size;
    more = listed.truncated;
    cursor = listed.truncated ? listed.cursor : undefined;
  }
  const afterRoll = size(db, "shard_record") / RECORDS;
  db.close();
  return { keepUs, rollUs, keptBytes, afterRoll, indexBytes, r2Bytes: r2Bytes / RECORDS };
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gcfaas-bench-shard-archive-"));
  const mf = new Miniflare({ modules: true, script: "export default { fetch() { return new Response(null) } }", r2Buckets: ["BUCKET"], r2Persist: path.join(dir, "r2") });
  try {
    const bucket = (await mf.getR2Bucket("BUCKET")) as unknown as R2Bucket;
    await round(dir, "warm", bucket);
    const rounds: Awaited<ReturnType<typeof round>>[] = [];
    for (let r = 0; r < ROUNDS; r++) rounds.push(await round(dir, `round-${r}`, bucket));
    const med = (f: (x: (typeof rounds)[number]) => number) => percentile(rounds.map(f), 50);
    const keep = med((x) => x.keepUs);
    const roll = med((x) => x.rollUs);
    printTable(`A shard's archive, ${RECORDS.toLocaleString("en")} records of a small JSON function, median of ${ROUNDS} rounds (node:sqlite, no fsync; R2: Miniflare's local bucket)`, ["", "µs a record", "vs baseline"], [
      ["keeping the finished record, batches of 64 (baseline)", keep.toFixed(1), "1.00×"],
      ["rolling it into a chunk: JSON, gzip, put, read back, index, cut", roll.toFixed(1), `${(roll / keep).toFixed(2)}×`],
    ]);
    const kept = med((x) => x.keptBytes);
    printTable(`Bytes a record takes, ${RECORDS.toLocaleString("en")} records (dbstat: tables and indexes; R2: the objects' sizes)`, ["", "B a record", "vs baseline"], [
      ["the kept record, waiting for the archive (baseline)", kept.toFixed(1), "1.00×"],
      ["the kept record once archived (payloads over 512 characters left out)", med((x) => x.afterRoll).toFixed(1), `${(med((x) => x.afterRoll) / kept).toFixed(2)}×`],
      ["its share of the shard's archive index, for good", med((x) => x.indexBytes).toFixed(2), `${(med((x) => x.indexBytes) / kept).toFixed(4)}×`],
      ["its share of the chunks in R2, for good", med((x) => x.r2Bytes).toFixed(1), `${(med((x) => x.r2Bytes) / kept).toFixed(3)}×`],
    ]);
  } finally {
    await mf.dispose();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

await main();
