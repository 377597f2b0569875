import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { shardStub } from "../../worker/dispatch/client.js";
import type { Dispatcher } from "../../worker/dispatch/durable-object.js";
import { rowOf } from "../../worker/db/client.js";
import type { TaskRow } from "../../worker/db/rows.js";
import { tasks } from "../../worker/db/schema/tasks.js";
import { issueHourOf, ROLL_MS, CHUNK_RECORDS } from "../../worker/shard-history/archive.js";
import { INLINE_PAYLOAD_CHARS } from "../../worker/shard-history/compact-record.js";
import { readChunk, SEGMENT_RECORDS } from "../../worker/task-history/chunk.js";
import { idTimePrefix, newId } from "../../worker/lib/ids.js";
import { HOUR_MS } from "../../worker/lib/time.js";
import { taskResultKey } from "../../worker/lib/storage-keys.js";
import { callJson, clearQueue, deployedFunction, newAccount, newEndpoint, recordsFlushed } from "./helpers.js";
import { eventually, FakeAgent } from "./fake-agent.js";

/**
 * Step 5 of the shard-resident history (docs/dispatch.md): each shard archives its finished records
 * to R2 itself, by hour of issue, indexed in its own SQLite with sidecars naming each chunk's
 * accounts and functions. While D1 still holds every record, the archive is a second copy: what it
 * must hold is D1's row, exactly, and find it again by id and by page.
 */

beforeEach(clearQueue);
// The shard's storage outlives a test: each starts with no records and no archive.
beforeEach(() =>
  inShard((_o, state) => {
    for (const table of ["shard_record", "shard_chunk", "shard_chunk_member"]) state.storage.sql.exec(`delete from ${table}`);
  }),
);
afterEach(() => FakeAgent.closeAll());

const inShard = <T>(fn: (o: Dispatcher, state: DurableObjectState) => T | Promise<T>) =>
  runInDurableObject(shardStub(env, 0), (o, state) => fn(o as unknown as Dispatcher, state));

async function d1Rows(ids: string[]): Promise<TaskRow[]> {
  await recordsFlushed();
  const out: TaskRow[] = [];
  for (const id of ids) {
    const raw = await env.DB.prepare("select * from tasks where id = ?").bind(id).first<Record<string, unknown>>();
    expect(raw).not.toBeNull();
    out.push(rowOf(tasks, raw!));
  }
  return out;
}

/** Finished tasks of one account through the API and a public endpoint, one with payloads over the inline size. */
async function finishedTasks() {
  const agent = await FakeAgent.connect("archive-node");
  const { token } = await newAccount();
  const fn = await deployedFunction(token);
  const other = await deployedFunction(token);
  const ep = await newEndpoint(token, fn);
  const big = "b".repeat(INLINE_PAYLOAD_CHARS + 1);
  const made = [
    (await callJson<{ id: string }>(`/v1/task/${fn}`, 201, { token, json: { n: 1 } })).id,
    (await callJson<{ id: string }>(`/gc/${ep}?q=2`, 201, { token: null, json: { n: 2 } })).id,
    (await callJson<{ id: string }>(`/v1/task/${other}`, 201, { token, json: { big } })).id,
  ];
  for (let i = 0; i < made.length; i++) {
    const id = (await agent.next("task.assign")).taskId;
    agent.done(id, id === made[2] ? big : `answer ${id}`, 200, { log: id === made[2] ? [big] : [`line ${id}`] });
  }
  await eventually(async () => (await d1Rows(made)).every((r) => r.finishedAt != null));
  const rows = await d1Rows(made);
  return { token, fn, other, rows, accountId: rows[0]!.accountId };
}

/** The roll as the alarm would run it once the oldest record has waited its time. */
const rolled = () => inShard((o) => o.archive.roll(Date.now() + ROLL_MS + 1));

describe("a shard's roll of its finished records", () => {
  it("waits until the oldest record has waited ROLL_MS, then archives each record as D1 holds it", async () => {
    const { rows } = await finishedTasks();
    expect(await inShard((o) => o.archive.roll(Date.now()))).toBe(0);
    const oldest = (await inShard((o) => o.history.oldestUnarchived()))!;
    expect(oldest).toBeLessThanOrEqual(Math.min(...rows.map((r) => r.finishedAt!)));
    expect(await inShard((o) => o.archive.nextAt())).toBe(oldest + ROLL_MS);
    expect(await rolled()).toBeGreaterThanOrEqual(rows.length);
    for (const row of rows) expect(await inShard((o) => o.archive.find(row.id, row.accountId))).toEqual(row);
    expect(await rolled()).toBe(0);
  });

  it("keeps a record whole until archived, and then only what a record keeps inline", async () => {
    const { rows } = await finishedTasks();
    const big = rows[2]!;
    expect(await inShard((o) => o.history.get(big.id, Date.now()))).toEqual({ row: big, far: [] });
    await rolled();
    expect(await inShard((o) => o.history.get(big.id, Date.now()))).toEqual({ row: { ...big, input: null, resultBody: null, log: null }, far: ["input", "resultBody", "log"] });
    expect(await inShard((o) => o.history.get(rows[0]!.id, Date.now()))).toEqual({ row: rows[0], far: [] });
  });

  it("does not wait ROLL_MS once a full chunk waits, and takes a few chunks a turn", async () => {
    const { accountId, rows } = synthetic(1, 3 * CHUNK_RECORDS);
    await inShard(async (o) => {
      const now = Date.now();
      const fresh = rows.map((r) => ({ ...r, finishedAt: now - 1 }));
      o.history.keep(fresh.slice(0, CHUNK_RECORDS - 1), now);
      expect(o.archive.nextAt()).toBe(now - 1 + ROLL_MS);
      expect(await o.archive.roll(now)).toBe(0);
      o.history.keep(fresh.slice(CHUNK_RECORDS - 1), now);
      expect(o.archive.nextAt()).toBeLessThanOrEqual(Date.now());
      expect(await o.archive.roll(now)).toBe(2 * CHUNK_RECORDS);
      expect(await o.archive.roll(now)).toBe(CHUNK_RECORDS);
      expect(await o.archive.roll(now)).toBe(0);
      expect((await o.archive.page({ accountId, limit: 3 * CHUNK_RECORDS })).map((r) => r.id)).toEqual(newestFirst(rows).map((r) => r.id));
    });
  });

  it("does not count a record kept again as waiting once the roll has looked", async () => {
    const { rows } = synthetic(1, 10);
    await inShard(async (o) => {
      const now = Date.now() + ROLL_MS + 1;
      o.history.keep(rows, now);
      await o.archive.roll(now);
      // A batch whose answer was lost is read back and kept again: the archived records stay as they are.
      for (let i = 0; i < CHUNK_RECORDS / rows.length; i++) o.history.keep(rows, now);
      expect(o.history.unreleased(100)).toHaveLength(rows.length);
      expect(await o.archive.roll(now)).toBe(0);
      expect(o.history.waiting).toBe(0);
      await o.archive.releaseArchived();
      expect(o.archive.nextAt()).toBeGreaterThan(Date.now() + ROLL_MS); // retention's, days away
    });
  });

  it("puts each record in one chunk when two rolls are asked for at once (the alarm's and another)", async () => {
    const { accountId, rows } = synthetic(2, 50);
    await inShard(async (o) => {
      const now = Date.now() + ROLL_MS + 1;
      o.history.keep(rows, now);
      const [a, b] = await Promise.all([o.archive.roll(now), o.archive.run(now)]);
      expect(a + b.archived).toBe(rows.length);
      const chunks = [...o.archive.index.newestOf(accountId, undefined, undefined)];
      expect(chunks.reduce((n, c) => n + c.records, 0)).toBe(rows.length);
    });
  });

  it("puts a chunk an hour of issue, named by the shard, the hour and its ids, that reads back as the records", async () => {
    const { rows } = await finishedTasks();
    await rolled();
    const chunks = await inShard((o) => o.archive.index.holding(rows[0]!.id, issueHourOf(rows[0]!.id)));
    expect(chunks).toHaveLength(1);
    const key = await inShard((o) => o.archive.keyOf(chunks[0]!));
    expect(key).toMatch(/^shard-history\/[0-9a-f]+\/\d{4}-\d\d-\d\dT\d\d\/[0-9a-z]{30}-[0-9a-z]{30}-\d+\.ndjson\.gz$/);
    const back = await readChunk(env.BUCKET, key, chunks[0]!.segments);
    for (const row of rows) expect(back.find((r) => r.id === row.id)).toEqual(row);
  });

  it("clears the object of a roll cut short between its put and its index, and archives its records again", async () => {
    const { rows } = await finishedTasks();
    const first = rows[0]!;
    // A roll noted and put its chunk, and its instance went before the index said it was written.
    const key = await inShard(async (o) => {
      const n = o.archive.index.begin(issueHourOf(first.id), first.id, first.id, 1);
      const k = o.archive.keyOf({ hour: issueHourOf(first.id), firstId: first.id, lastId: first.id, records: 1 });
      await env.BUCKET.put(k, "half a roll");
      expect(o.archive.index.unwritten().map((c) => c.n)).toEqual([n]);
      expect(o.archive.nextAt()).toBeLessThanOrEqual(Date.now());
      return k;
    });
    await inShard((o) => o.archive.run(Date.now() + ROLL_MS + 1));
    expect(await inShard((o) => o.archive.index.unwritten())).toEqual([]);
    expect(await env.BUCKET.head(key)).toBeNull();
    expect(await inShard((o) => o.archive.find(first.id, first.accountId))).toEqual(first);
  });
});

describe("a shard's archived record by id", () => {
  it("is found only in its own hour's chunks, and an id the shard never archived is not", async () => {
    const { rows } = await finishedTasks();
    await rolled();
    const { accountId } = rows[1]!;
    expect(await inShard((o) => o.archive.find(rows[1]!.id, accountId))).toEqual(rows[1]);
    expect(await inShard((o) => o.archive.find(rows[1]!.id, newId()))).toBeUndefined();
    expect(await inShard((o) => o.archive.find(newId(), accountId))).toBeUndefined();
    expect(await inShard((o) => o.archive.find(idAt(Date.now() - 5 * HOUR_MS), accountId))).toBeUndefined();
  });
});

/** An id of exactly this time (`newId` never goes back in time, so it would not make an older one after a newer). */
const idAt = (ms: number) => idTimePrefix(ms) + newId().slice(idTimePrefix(ms).length);

/**
 * Synthetic finished rows of one account and two functions, `perHour` an hour (100 ms apart, from
 * the 50th minute back) over `hours` whole hours, the last of them two hours ago.
 */
function synthetic(hours: number, perHour: number) {
  const accountId = newId();
  const fns = [newId(), newId()];
  const twoHoursAgo = Date.now() - 2 * HOUR_MS;
  const end = twoHoursAgo - (twoHoursAgo % HOUR_MS) + 50 * 60_000;
  const rows: TaskRow[] = [];
  for (let h = hours - 1; h >= 0; h--)
    for (let i = 0; i < perHour; i++) {
      const issuedAt = end - h * HOUR_MS - i * 100;
      rows.push({ ...SAMPLE, id: idAt(issuedAt), accountId, functionId: fns[i % 2]!, issuedAt, finishedAt: issuedAt + 500 });
    }
  return { accountId, fns, rows };
}

const newestFirst = (rows: TaskRow[]) => [...rows].sort((a, b) => (a.id < b.id ? 1 : -1));

/** Two rolls, each taking every other record of each hour: chunks of one hour overlap in their ids. */
async function inTwoRolls(o: Dispatcher, rows: TaskRow[]) {
  const now = Date.now() + ROLL_MS + 1;
  o.history.keep(rows.filter((_, i) => i % 2 === 0), now);
  await o.archive.roll(now);
  o.history.keep(rows.filter((_, i) => i % 2 === 1), now);
  await o.archive.roll(now);
}

describe("a page of an account's or a function's archived records", () => {
  it("answers newest first below any id, across hours and across chunks of the same hour from two rolls", async () => {
    const { accountId, fns, rows } = synthetic(3, 30);
    await inShard(async (o) => {
      await inTwoRolls(o, rows);
      expect(o.archive.index.holding(rows[5]!.id, issueHourOf(rows[5]!.id))).toHaveLength(2);
      const all = newestFirst(rows);
      for (const scope of [{ accountId }, { accountId, functionId: fns[0]! }, { accountId, functionId: fns[1]! }]) {
        const theirs = all.filter((r) => !("functionId" in scope) || r.functionId === scope.functionId);
        expect(await o.archive.page({ ...scope, limit: 7 })).toEqual(theirs.slice(0, 7));
        for (const at of [1, 13, 29, 30, 31, 44, theirs.length - 2]) {
          const before = theirs[at]!.id;
          expect(await o.archive.page({ ...scope, before, limit: 10 })).toEqual(theirs.slice(at + 1, at + 11));
        }
        // An id that is no record's, inside an hour.
        expect(await o.archive.page({ ...scope, before: idAt(theirs[20]!.issuedAt + 1), limit: 5 })).toEqual(theirs.filter((r) => r.issuedAt <= theirs[20]!.issuedAt).slice(0, 5));
        expect(await o.archive.page({ ...scope, limit: 1000 })).toEqual(theirs);
      }
      // Above an id: what a full page of live records leaves to the archive.
      expect(await o.archive.page({ accountId, above: all[12]!.id, limit: 10 })).toEqual(all.slice(0, 10));
      expect(await o.archive.page({ accountId, above: all[12]!.id, limit: 50 })).toEqual(all.slice(0, 12));
      expect(await o.archive.page({ accountId: newId(), limit: 10 })).toEqual([]);
      // Another account's scope names no chunk of this one's, and a function's page is its account's only.
      expect(await o.archive.page({ accountId: newId(), functionId: fns[0]!, limit: 10 })).toEqual([]);
    });
  });

  it("answers the same from chunks of many segments, a page ending inside a chunk or across two of the same hour", async () => {
    const { accountId, fns, rows } = synthetic(2, 10 * SEGMENT_RECORDS + 7);
    await inShard(async (o) => {
      // Each hour's two chunks of ~250 records, six segments each.
      await inTwoRolls(o, rows);
      expect(o.archive.index.holding(rows[5]!.id, issueHourOf(rows[5]!.id)).map((c) => c.segments.length)).toEqual([6, 6]);
      const all = newestFirst(rows);
      for (const scope of [{ accountId }, { accountId, functionId: fns[1]! }]) {
        const theirs = all.filter((r) => !("functionId" in scope) || r.functionId === scope.functionId);
        for (const limit of [1, 49, 50, 51, 130]) {
          expect(await o.archive.page({ ...scope, limit })).toEqual(theirs.slice(0, limit));
          for (const at of [0, 48, 49, 50, 99, 100, 101, 300, 480, theirs.length - 2]) {
            const before = theirs[at]!.id;
            expect(await o.archive.page({ ...scope, before, limit })).toEqual(theirs.slice(at + 1, at + 1 + limit));
          }
          for (const at of [1, 75, 260]) expect(await o.archive.page({ ...scope, above: theirs[at]!.id, limit })).toEqual(theirs.slice(0, Math.min(at, limit)));
        }
      }
    });
  });

  it("answers a scope's records alone from chunks mixing accounts, where other records name the scope in their payloads", async () => {
    const a = synthetic(1, 4 * SEGMENT_RECORDS);
    const b = synthetic(1, 4 * SEGMENT_RECORDS);
    // A third of B's records name A's account and functions as JSON strings of their own (headers, log lines); of A's, B's.
    const mentioning = (rows: TaskRow[], other: { accountId: string; fns: string[] }) =>
      rows.map((r, i) => (i % 3 ? r : { ...r, resultHeaders: { "x-of": other.fns[i % 2]!, "x-account": other.accountId }, log: [other.fns[0]!] }));
    const rows = [...mentioning(a.rows, b), ...mentioning(b.rows, a)];
    await inShard(async (o) => {
      await inTwoRolls(o, rows);
      expect(o.archive.index.holding(rows[5]!.id, issueHourOf(rows[5]!.id)).map((c) => c.segments.length)).toEqual([4, 4]);
      for (const { accountId, fns } of [a, b]) {
        const all = newestFirst(rows.filter((r) => r.accountId === accountId));
        for (const scope of [{ accountId, functionId: fns[0]! }, { accountId }, { accountId, functionId: fns[1]! }]) {
          const theirs = all.filter((r) => !("functionId" in scope) || r.functionId === scope.functionId);
          for (const limit of [1, 60, 500]) {
            expect(await o.archive.page({ ...scope, limit })).toEqual(theirs.slice(0, limit));
            for (const at of [0, 59, 98]) expect(await o.archive.page({ ...scope, before: theirs[at]!.id, limit })).toEqual(theirs.slice(at + 1, at + 1 + limit));
          }
        }
        // By id, after pages decoded only their scope's lines: the record whole, whatever its scope.
        for (const r of [all[0]!, all[77]!, all.at(-1)!]) expect(await o.archive.find(r.id, accountId)).toEqual(r);
      }
      // Another account's function: named in the payloads of this shard's records, its page is empty.
      expect(await o.archive.page({ accountId: a.accountId, functionId: b.fns[0]!, limit: 10 })).toEqual([]);
    });
  });

  it("reads a chunk again once retention rewrote it: a page and a get after show its records purged", async () => {
    const { accountId, rows } = synthetic(1, 3 * SEGMENT_RECORDS);
    await inShard(async (o) => {
      const now = Date.now() + ROLL_MS + 1;
      o.history.keep(rows, now);
      await o.archive.roll(now);
      expect(await o.archive.page({ accountId, limit: rows.length })).toEqual(newestFirst(rows));
      const purgeAt = Math.max(...rows.map((r) => r.finishedAt!)) + (o.archive["retentionMs"] as number) + 1;
      expect(await o.archive.purge(purgeAt)).toBe(rows.length);
      const purged = (r: TaskRow) => ({ ...r, input: null, inputKey: null, resultHeaders: null, resultBody: null, resultKey: null, log: null, logKey: null, purgedAt: purgeAt });
      expect(await o.archive.page({ accountId, limit: rows.length })).toEqual(newestFirst(rows).map(purged));
      for (const r of [rows[0]!, rows[70]!, rows.at(-1)!]) expect(await o.archive.find(r.id, accountId)).toEqual(purged(r));
    });
  });

  it("splits an hour's records into chunks of at most CHUNK_RECORDS", async () => {
    const { accountId, rows } = synthetic(1, CHUNK_RECORDS + 10);
    await inShard(async (o) => {
      const now = Date.now() + ROLL_MS + 1;
      o.history.keep(rows, now);
      expect(await o.archive.roll(now)).toBe(rows.length);
      const chunks = [...o.archive.index.newestOf(accountId, undefined, undefined)];
      expect(chunks.map((c) => c.records).sort((a, b) => a - b)).toEqual([10, CHUNK_RECORDS]);
      expect((await o.archive.page({ accountId, limit: 50 })).map((r) => r.id)).toEqual(newestFirst(rows).slice(0, 50).map((r) => r.id));
    });
  });
});

describe("retention of a shard's archived records", () => {
  it("purges the records finished before the period, their R2 objects too, keeps the others, and is due again at the next", async () => {
    const { rows } = synthetic(2, 4);
    await inShard(async (o) => {
      const now = Date.now() + ROLL_MS + 1;
      o.history.keep(rows, now);
      await o.archive.roll(now);
      const retention = o.archive["retentionMs"] as number;
      // A large result of each record, in R2 as the group commit puts it.
      for (const r of rows) await env.BUCKET.put(taskResultKey(r.accountId, r.id), "a large result");
      const cutoffAfter = rows[5]!.finishedAt!; // the hour's records before it are past the period
      const purgeAt = cutoffAfter + retention;
      const purged = await o.archive.purge(purgeAt);
      const expired = rows.filter((r) => r.finishedAt! < cutoffAfter);
      expect(purged).toBe(expired.length);
      for (const r of rows) {
        const found = await o.archive.find(r.id, r.accountId);
        if (r.finishedAt! < cutoffAfter)
          expect(found).toEqual({ ...r, input: null, inputKey: null, resultHeaders: null, resultBody: null, resultKey: null, log: null, logKey: null, purgedAt: purgeAt });
        else expect(found).toEqual(r);
      }
      for (const r of rows) expect(await env.BUCKET.head(taskResultKey(r.accountId, r.id)) === null).toBe(r.finishedAt! < cutoffAfter);
      expect(o.archive.index.nextPurge()).toBe(Math.min(...rows.filter((r) => r.finishedAt! >= cutoffAfter).map((r) => r.finishedAt!)));
      expect(await o.archive.purge(purgeAt)).toBe(0);
    });
  });
});

describe("the window of a shard's records, with the archive", () => {
  it("keeps a record past the window until the archive has it and D1 was asked to let its row go", async () => {
    const { rows } = synthetic(3, 2);
    await inShard(async (o) => {
      const later = Date.now() + 5 * HOUR_MS;
      o.history.keep(rows, Date.now());
      expect(o.history.prune(later)).toBe(0);
      await o.archive.roll(later);
      expect(o.history.prune(later)).toBe(0);
      expect(await o.archive.releaseArchived()).toBe(rows.length);
      expect(o.history.prune(later)).toBe(rows.length);
      for (const r of rows) expect(await o.archive.find(r.id, r.accountId)).toEqual(r);
    });
  });
});

const SAMPLE: TaskRow = {
  id: "", accountId: "", functionId: "", lang: "py", buildId: newId(), endpointId: null, triggerId: null, parentTaskId: null,
  chainId: null, hop: 0, issuedAt: 0, assignedAt: 5, finishedAt: 0, progress: 100, status: 200, node: "node-1", timeout: 30,
  cpuCount: 0.5, memSize: 128, privileged: false, egress: "none", networkLatency: 3, runtime: "runsc", input: '{"n":1}', inputKey: null,
  resultStatus: 200, resultHeaders: { "content-type": "text/plain" }, resultBody: "hi", resultKey: null, log: ["a"], logKey: null,
  durationMs: 4, attempts: 1, purgedAt: null, scheduledId: null,
};
