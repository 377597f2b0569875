import { applyD1Migrations, env } from "cloudflare:test";
import { describe, expect, it } from "vitest";

/**
 * Migrations that move data, applied to a database that holds what the earlier ones left
 * (MIGRATION_DB: empty until this file fills it, one migration at a time).
 */

const db = env.MIGRATION_DB;
const upTo = (name: string) => env.TEST_MIGRATIONS.slice(0, env.TEST_MIGRATIONS.findIndex((m) => m.name.startsWith(name)) + 1);
const rows = async (query: string) => (await db.prepare(query).all()).results;

describe("0022_task_archive_functions", () => {
  it("indexes every archived chunk by each of its functions and totals the per-day counts, then drops the JSON list", async () => {
    await applyD1Migrations(db, upTo("0021_"));
    await db.batch([
      db.prepare("insert into accounts (id, name, created_at) values ('acct-a', 'a', 0), ('acct-b', 'b', 0)"),
      db.prepare(
        `insert into task_archive (key, account_id, first_id, last_id, records, bytes, segments, functions, purge_due, archived_at) values
         ('history/acct-a/1-3.ndjson.gz', 'acct-a', '1', '3', 3, 100, '[["1",0]]', '["fn-x","fn-y"]', null, 0),
         ('history/acct-a/4-6.ndjson.gz', 'acct-a', '4', '6', 3, 100, '[["4",0]]', '["fn-y"]', 5, 0),
         ('history/acct-b/2-2.ndjson.gz', 'acct-b', '2', '2', 1, 50, '[["2",0]]', '["fn-z"]', null, 0)`,
      ),
      db.prepare(
        `insert into task_archive_counts (account_id, function_id, day, tasks) values
         ('acct-a', 'fn-x', 0, 1), ('acct-a', 'fn-y', 0, 2), ('acct-a', 'fn-y', 86400000, 3), ('acct-b', 'fn-z', 0, 1)`,
      ),
    ]);

    await applyD1Migrations(db, upTo("0022_"));

    expect(await rows("select function_id, last_id, account_id from task_archive_functions order by function_id, last_id")).toEqual([
      { function_id: "fn-x", last_id: "3", account_id: "acct-a" },
      { function_id: "fn-y", last_id: "3", account_id: "acct-a" },
      { function_id: "fn-y", last_id: "6", account_id: "acct-a" },
      { function_id: "fn-z", last_id: "2", account_id: "acct-b" },
    ]);
    expect(await rows("select account_id, function_id, tasks from task_archive_totals order by account_id, function_id")).toEqual([
      { account_id: "acct-a", function_id: "fn-x", tasks: 1 },
      { account_id: "acct-a", function_id: "fn-y", tasks: 5 },
      { account_id: "acct-b", function_id: "fn-z", tasks: 1 },
    ]);
    expect((await rows("select name from pragma_table_info('task_archive')")).map((c) => c.name)).not.toContain("functions");
    // The chunks and their per-day counts are as they were.
    expect(await rows("select key, purge_due from task_archive order by key")).toHaveLength(3);
    expect(await rows("select * from task_archive_counts")).toHaveLength(4);
  });
});

describe("0028_task_archive_without_rowid", () => {
  it("keeps every per-day count, total and function index row of the archive, in tables keyed by themselves", async () => {
    await applyD1Migrations(db, upTo("0027_"));
    const before = async () => ({
      counts: await rows("select account_id, function_id, day, tasks from task_archive_counts order by account_id, day, function_id"),
      totals: await rows("select account_id, function_id, tasks from task_archive_totals order by account_id, function_id"),
      functions: await rows("select function_id, last_id, account_id from task_archive_functions order by function_id, last_id"),
    });
    const kept = await before();
    expect(kept.counts).toHaveLength(4);
    expect(kept.totals).toHaveLength(3);
    expect(kept.functions).toHaveLength(4);

    await applyD1Migrations(db, upTo("0028_"));

    expect(await before()).toEqual(kept);
    for (const table of ["task_archive_counts", "task_archive_totals", "task_archive_functions"])
      expect((await db.prepare("select sql from sqlite_schema where name = ?").bind(table).first<{ sql: string }>())!.sql, table).toMatch(/WITHOUT ROWID$/);
    expect(await rows("select name from sqlite_schema where name = 'task_archive_counts_day'")).toEqual([]);
    // An account's deletion still takes its rows with it (the foreign keys came along).
    await db.prepare("delete from accounts where id = 'acct-a'").run();
    expect((await before()).counts).toEqual([{ account_id: "acct-b", function_id: "fn-z", day: 0, tasks: 1 }]);
    expect((await before()).functions).toEqual([{ function_id: "fn-z", last_id: "2", account_id: "acct-b" }]);
  });
});

describe("0029_task_archive_issues_folded", () => {
  it("folds the one-a-task issue times into their function's and endpoint's minutes, then drops their table", async () => {
    await applyD1Migrations(db, upTo("0028_"));
    const m = 1_800_000_000_000 - (1_800_000_000_000 % 60_000);
    await db.batch([
      db.prepare("insert into task_archive_minutes (minute, scope, tasks, offsets) values (?, 'fn-1', 2, '5,7')").bind(m),
      db.prepare(
        `insert into task_archive_issues (function_id, endpoint_id, issued_at) values
         ('fn-1', null, ?), ('fn-1', 'ep-1', ?), ('fn-1', 'ep-1', ?), ('fn-2', null, ?)`,
      ).bind(m + 9, m + 59_999, m + 60_000, m + 120_001),
    ]);

    await applyD1Migrations(db, upTo("0029_"));

    const minutes = await rows("select minute, scope, tasks, offsets from task_archive_minutes order by scope, minute");
    const offsets = (o: unknown) => String(o).split(",").map(Number).sort((x, y) => x - y);
    expect(minutes.map((r) => ({ ...r, offsets: offsets(r.offsets) }))).toEqual([
      { minute: m, scope: "ep-1", tasks: 1, offsets: [59_999] },
      { minute: m + 60_000, scope: "ep-1", tasks: 1, offsets: [0] },
      { minute: m, scope: "fn-1", tasks: 4, offsets: [5, 7, 9, 59_999] },
      { minute: m + 60_000, scope: "fn-1", tasks: 1, offsets: [0] },
      { minute: m + 120_000, scope: "fn-2", tasks: 1, offsets: [1] },
    ]);
    expect(await rows("select name from sqlite_schema where name like 'task_archive_issues%'")).toEqual([]);
  });
});

describe("0030_task_archive_functions_by_account", () => {
  it("keeps every function index row of the archive, keyed by account first, and an account's deletion takes its rows by that key", async () => {
    await applyD1Migrations(db, upTo("0029_"));
    await db.batch([
      db.prepare("insert into accounts (id, name, created_at) values ('acct-c', 'c', 0), ('acct-d', 'd', 0)"),
      db.prepare(
        `insert into task_archive_functions (function_id, last_id, account_id) values
         ('fn-c1', '30', 'acct-c'), ('fn-c1', '40', 'acct-c'), ('fn-c2', '40', 'acct-c'), ('fn-d1', '35', 'acct-d')`,
      ),
    ]);
    const all = () => rows("select account_id, function_id, last_id from task_archive_functions order by account_id, function_id, last_id");
    const kept = await all();
    expect(kept).toHaveLength(5); // with acct-b's, which 0028's test left

    await applyD1Migrations(db, upTo("0030_"));

    expect(await all()).toEqual(kept);
    expect((await db.prepare("select sql from sqlite_schema where name = 'task_archive_functions'").first<{ sql: string }>())!.sql).toMatch(/WITHOUT ROWID$/);
    expect((await rows("select name from pragma_index_info('sqlite_autoindex_task_archive_functions_1') order by seqno")).map((c) => c.name)).toEqual([
      "account_id",
      "function_id",
      "last_id",
    ]);
    const plan = (await db.prepare("explain query plan delete from task_archive_functions where account_id = ?").bind("acct-c").all<{ detail: string }>()).results;
    expect(plan.map((r) => r.detail)).toEqual(["SEARCH task_archive_functions USING PRIMARY KEY (account_id=?)"]);
    await db.prepare("delete from accounts where id = 'acct-c'").run();
    expect(await all()).toEqual(kept.filter((r) => r.account_id !== "acct-c"));
  });
});

describe("0031_task_archive_names_derived", () => {
  it("keeps every row and its name, and lets rows without a name in beside the earlier code's inserts", async () => {
    await applyD1Migrations(db, upTo("0030_"));
    await db.prepare(
      `insert into task_archive (key, account_id, first_id, last_id, records, bytes, segments, purge_due, archived_at) values
       ('history/acct-d/10-19-10.ndjson.gz', 'acct-d', '10', '19', 10, 300, ':0', 7, 1)`,
    ).run();
    const columns = "key, account_id, first_id, last_id, records, bytes, segments, purge_due, archived_at";
    const all = () => rows(`select ${columns} from task_archive order by account_id, last_id`);
    const before = await all();
    // With acct-b's chunk, named before the count was part of names, which 0022's test left.
    expect(before.map((r) => r.key)).toEqual(["history/acct-b/2-2.ndjson.gz", "history/acct-d/10-19-10.ndjson.gz"]);

    await applyD1Migrations(db, upTo("0031_"));

    // Code from before the migration runs on it until the deploy after: its rows still name their chunks.
    expect(await all()).toEqual(before);
    expect(await rows("select name from pragma_table_info('task_archive') where pk > 0")).toEqual([]);
    expect((await rows("select name from sqlite_schema where tbl_name = 'task_archive' and type = 'index' order by name")).map((r) => r.name)).toEqual([
      "task_archive_account",
      "task_archive_key",
      "task_archive_purge",
    ]);
    // That code's insert (its conflict the key) still does nothing for a chunk indexed already...
    const earlier = `insert into task_archive (${columns}) values (?, 'acct-d', '10', '19', 10, 300, ':0', 7, 1) on conflict (key) do nothing`;
    await db.prepare(earlier).bind("history/acct-d/10-19-10.ndjson.gz").run();
    // ...and rows without a name, as this code writes them, go in side by side.
    const unnamed = `insert into task_archive (account_id, first_id, last_id, records, bytes, segments, archived_at) values ('acct-d', ?, ?, 5, 100, ':0', 3)`;
    await db.batch([db.prepare(unnamed).bind("30", "34"), db.prepare(unnamed).bind("40", "44")]);
    expect((await all()).map((r) => r.key)).toEqual(["history/acct-b/2-2.ndjson.gz", "history/acct-d/10-19-10.ndjson.gz", null, null]);
    await db.prepare("delete from accounts where id = 'acct-d'").run();
    expect((await all()).map((r) => r.account_id)).toEqual(["acct-b"]);
  });
});

describe("0032_shard_issue_counts", () => {
  it("sets the cutover once, to the next whole minute after it runs", async () => {
    const before = Date.now();
    await applyD1Migrations(db, upTo("0032_"));
    const set = await rows("select from_ms from issue_counts_from");
    expect(set).toHaveLength(1);
    const from = Number(set[0]!.from_ms);
    expect(from % 60_000).toBe(0);
    expect(from).toBeGreaterThan(before);
    expect(from).toBeLessThanOrEqual(Date.now() + 60_000);
  });
});

describe("0033_shard_account_day_counts", () => {
  it("sets the accounts' cutover to the next UTC midnight after it runs, keeping the functions' cutover", async () => {
    const before = Date.now();
    await applyD1Migrations(db, upTo("0032_"));
    const [kept] = await rows("select from_ms from issue_counts_from");
    await applyD1Migrations(db, upTo("0033_"));
    const set = await rows("select from_ms, accounts_from_ms from issue_counts_from");
    expect(set).toHaveLength(1);
    expect(set[0]!.from_ms).toBe(kept!.from_ms);
    const from = Number(set[0]!.accounts_from_ms);
    expect(from % 86_400_000).toBe(0);
    expect(from).toBeGreaterThan(before);
    expect(from).toBeLessThanOrEqual(Date.now() + 86_400_000);
  });
});

describe("0034_shard_usage", () => {
  it("meters an outcome by its row's update outside a shard's batch (the code before it, during the deploy), and by the shard's sums inside one", async () => {
    await applyD1Migrations(db, upTo("0033_"));
    const task = (id: string) =>
      db.prepare(`insert into tasks (id, account_id, function_id, lang, issued_at, timeout, cpu_count, mem_size, privileged, node)
        values (?, 'acct-m', 'fn-m', 'py', 0, 60, 1, 512, 0, 'node-1')`).bind(id);
    await db.batch([db.prepare("insert into accounts (id, name, created_at) values ('acct-m', 'm', 0)"), task("t-before")]);
    await applyD1Migrations(db, upTo("0034_"));
    await db.batch([task("t-old"), task("t-shard")]);
    const finish = (id: string) => db.prepare("update tasks set finished_at = ?, status = 200, duration_ms = 10 where id = ? and finished_at is null").bind(Date.UTC(2026, 10, 5), id);
    const totals = () => rows("select period, invocations, duration_ms, mib_ms from usage_totals where account_id = 'acct-m'");

    // The earlier code's batch: the update meters, as it did before the migration.
    await db.batch([finish("t-before"), finish("t-old")]);
    expect(await totals()).toEqual([{ period: "2026-11", invocations: 2, duration_ms: 20, mib_ms: 20 * 512 }]);

    // A shard's batch: the update inside metering_in_shard's row meters nothing; its sums do, by their growth.
    const sums = (invocations: number, ms: number) =>
      db.prepare(`insert into shard_usage (account_id, period, shard, invocations, duration_ms, mib_ms) values ('acct-m', '2026-11', 'shard-a', ?, ?, ?)
        on conflict (account_id, period, shard) do update set invocations = max(shard_usage.invocations, excluded.invocations),
          duration_ms = max(shard_usage.duration_ms, excluded.duration_ms), mib_ms = max(shard_usage.mib_ms, excluded.mib_ms)`).bind(invocations, ms, ms * 512);
    const shardBatch = [db.prepare("insert or replace into metering_in_shard (batch) values (1)"), finish("t-shard"), db.prepare("delete from metering_in_shard"), sums(1, 10)];
    await db.batch(shardBatch);
    expect(await totals()).toEqual([{ period: "2026-11", invocations: 3, duration_ms: 30, mib_ms: 30 * 512 }]);
    // Sent again (its answer lost): nothing moves; a later batch adds only its growth.
    await db.batch(shardBatch);
    await db.batch([sums(3, 40)]);
    expect(await totals()).toEqual([{ period: "2026-11", invocations: 5, duration_ms: 60, mib_ms: 60 * 512 }]);
    expect(await rows("select * from metering_in_shard")).toEqual([]);
  });
});

describe("0035_fresh_history_counted_by_shards", () => {
  it("moves a new database's cutovers back to 0: the shards count every task it will have", async () => {
    // This file's own database got every migration at once, before any task, as a new deployment's does.
    expect(await env.DB.prepare("select from_ms, accounts_from_ms from issue_counts_from").all().then((r) => r.results)).toEqual([{ from_ms: 0, accounts_from_ms: 0 }]);
  });

  it("keeps the cutovers of a database with any task history", async () => {
    await applyD1Migrations(db, upTo("0034_"));
    expect(await rows("select count(*) as n from tasks")).not.toEqual([{ n: 0 }]);
    const [before] = await rows("select from_ms, accounts_from_ms from issue_counts_from");
    expect(Number(before!.from_ms)).toBeGreaterThan(0);
    await applyD1Migrations(db, upTo("0035_"));
    expect(await rows("select from_ms, accounts_from_ms from issue_counts_from")).toEqual([before]);
  });
});
