import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { RENEWAL_CRON, SWEEP_CRON } from "../../worker/crons.js";
import { openDb } from "../../worker/db/client.js";
import { DAY_MS } from "../../worker/lib/time.js";
import { pruneUsage, usagePruned } from "../../worker/services/usage-pruning.js";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { call, callJson, clearQueue, consolePage, deployedFunction, flushedDb, newAccount, runCron, sql } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const PERIOD = new Date().toISOString().slice(0, 7);
/** The sweep with the task records kept in D1, so that only the usage rows move. */
const sweep = (scheduledTime: number) => runCron(SWEEP_CRON, scheduledTime, { TASK_ARCHIVE_AFTER_HOURS: "87600" });

const usageRows = async (accountId: string) =>
  (await (await flushedDb()).prepare("select task_id as id from usage where account_id = ? order by rowid").bind(accountId).all<{ id: string }>()).results.map((r) => r.id);
const totals = async (accountId: string) =>
  (await (await flushedDb()).prepare("select period, invocations, duration_ms, mib_ms from usage_totals where account_id = ? order by period").bind(accountId).all()).results;
/** A usage row as a failed attempt's record writes it (`<task>#<attempt>`), finished at `at`. */
const meter = (taskId: string, accountId: string, at: number) =>
  sql("insert into usage (task_id, account_id, function_id, period, finished_at, duration_ms, mem_mib) values (?, ?, 'f', ?, ?, 10, 256) on conflict do nothing", taskId, accountId, PERIOD, at);

/** Everything a caller can read of its usage and invoices. */
async function billingReads(token: string) {
  const list = await callJson<{ id: string }[]>("/v1/invoice/list", 200, { token });
  const page = await consolePage("/console/usage", token);
  return {
    usage: await callJson("/v1/usage", 200, { token }),
    invoices: list,
    details: await Promise.all(list.map((i) => callJson(`/v1/invoice/${i.id}`, 200, { token }))),
    consoleInvocations: /<span id="invocations">(\d+)<\/span>/.exec(page)?.[1],
  };
}

describe("usage pruning (hourly sweep)", () => {
  it("deletes usage rows finished before the 2-day horizon, keeps the newer, and changes no answer about usage or invoices", async () => {
    const agent = await FakeAgent.connect("pruned");
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    for (let i = 0; i < 3; i++) {
      const { id } = await callJson(`/v1/task/${fn}`, 201, { token, method: "POST" });
      await agent.next("task.assign");
      agent.done(id, "ok", 200, { durationMs: 30 });
      await call(`/v1/task/${id}/result?wait=5`, { token });
    }
    await runCron(RENEWAL_CRON, Date.parse("2026-12-01T00:05:00Z")); // an invoice to read back
    // A task's own outcome leaves no usage row (the update that finishes its row meters it): the
    // rows are a retried task's failed attempts.
    expect(await usageRows(accountId)).toEqual([]);
    const finished = (await (await flushedDb()).prepare("select max(finished_at) as at from tasks where account_id = ?").bind(accountId).first<{ at: number }>())!.at;
    const later = finished + DAY_MS;
    for (const attempt of ["retried#1", "retried#2"]) await meter(attempt, accountId, finished);
    await meter("recent#1", accountId, later);
    const ran = ["retried#1", "retried#2"];
    const before = { totals: await totals(accountId), reads: await billingReads(token) };
    expect(before.reads.usage).toMatchObject({ invocations: 6, durationMs: 120 });
    expect(before.reads.invoices).toHaveLength(1);
    expect(before.reads.consoleInvocations).toBe("6");

    await sweep(finished + 1.5 * DAY_MS); // inside the horizon: nothing goes
    expect(await usageRows(accountId)).toEqual([...ran, "recent#1"]);

    await sweep(finished + 2.5 * DAY_MS);
    expect(await usageRows(accountId)).toEqual(["recent#1"]);
    expect({ totals: await totals(accountId), reads: await billingReads(token) }).toEqual(before);

    await sweep(later + 3 * DAY_MS);
    expect(await usageRows(accountId)).toEqual([]);
    expect({ totals: await totals(accountId), reads: await billingReads(token) }).toEqual(before);
  });

  it("deletes in pages of a bounded size, and stops at the first row newer than the horizon", async () => {
    await sql("delete from usage"); // the head of the table is this test's rows alone
    const { accountId } = await newAccount();
    const t0 = Date.parse("2020-03-01T00:00:00Z");
    for (let i = 0; i < 5; i++) await meter(`old${i}`, accountId, t0 + i);
    await meter("new", accountId, t0 + 30 * DAY_MS);
    // Inserted late with an old time (held through an outage): it waits until the row before it goes.
    await meter("late", accountId, t0 + 10);
    const now = t0 + 10 * DAY_MS;
    const db = openDb(env);
    await flushedDb();
    expect(await pruneUsage(db, 7 * DAY_MS, now, { page: 2, maxPages: 2 })).toBe(4);
    expect(await usageRows(accountId)).toEqual(["old4", "new", "late"]);
    expect(await pruneUsage(db, 7 * DAY_MS, now, { page: 2, maxPages: 2 })).toBe(1);
    expect(await usageRows(accountId)).toEqual(["new", "late"]);
    expect(await pruneUsage(db, 7 * DAY_MS, t0 + 40 * DAY_MS, { page: 2, maxPages: 2 })).toBe(2);
    expect(await usageRows(accountId)).toEqual([]);
  });

  it("reads the head of the table in rowid order, through no index on finished_at (usage has none but its key), and deletes by rowid", async () => {
    const q = new SQLiteAsyncDialect().sqlToQuery(usagePruned(1, 1000));
    const plan = await (await flushedDb()).prepare(`explain query plan ${q.sql}`).bind(...q.params).all<{ detail: string }>();
    const details = plan.results.map((r) => r.detail);
    expect(details).toContain("SEARCH usage USING INTEGER PRIMARY KEY (rowid=?)");
    expect(details.filter((d) => /\busage\b/.test(d) && /^SCAN/.test(d))).toEqual(["SCAN usage"]);
    expect(details.join("\n")).not.toMatch(/TEMP B-TREE|finished_at/i);
    // No index of usage but its key: pruning (and nothing else) costs bytes on the rows it keeps.
    const indexes = await (await flushedDb()).prepare("select name from sqlite_schema where type = 'index' and tbl_name = 'usage'").all<{ name: string }>();
    expect(indexes.results.map((r) => r.name)).toEqual(["sqlite_autoindex_usage_1"]);
  });
});
