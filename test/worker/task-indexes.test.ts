import { sql } from "drizzle-orm";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { describe, expect, it } from "vitest";
import { archivedIssuedSince } from "../../worker/task-history/issue-minutes.js";
import { archivedOnDay } from "../../worker/task-history/counts.js";
import { archivedMinutesPruned } from "../../worker/task-history/issue-pruning.js";
import { flushedDb } from "./helpers.js";
import { env } from "cloudflare:test";
import { openDb } from "../../worker/db/client.js";
import type { Bindings } from "../../worker/env.js";
import { chunksHolding, pageChunks } from "../../worker/task-history/reads.js";

/** The plan SQLite chooses for `query` on the Worker's D1 (one line a step). */
const planOf = async (query: string, ...binds: unknown[]) =>
  (await (await flushedDb()).prepare(`explain query plan ${query}`).bind(...binds).all<{ detail: string }>()).results.map((r) => r.detail);

describe("indexes of tasks (each one a read needs, entries only for the rows it reads)", () => {
  it("keeps an endpoint's index for tasks with an endpoint alone, and its counts still read through it", async () => {
    const indexes = await (await flushedDb()).prepare("select name, sql from sqlite_schema where type = 'index' and tbl_name = 'tasks' and sql is not null order by name").all<{ name: string; sql: string }>();
    expect(indexes.results.map((r) => r.name)).toEqual(["tasks_account", "tasks_account_unfinished", "tasks_chain", "tasks_endpoint", "tasks_function", "tasks_unpurged"]);
    expect(indexes.results.find((r) => r.name === "tasks_endpoint")!.sql).toMatch(/where "tasks"\."endpoint_id" is not null$/i);
    // The endpoint's metrics (tasks/counts.ts): issued since a time, and every task it had.
    expect(await planOf("select count(*) from tasks where (tasks.endpoint_id = ? and tasks.issued_at >= ?)", "e", 1)).toEqual([
      "SEARCH tasks USING COVERING INDEX tasks_endpoint (endpoint_id=? AND issued_at>?)",
    ]);
    expect(await planOf("select count(*) from tasks where tasks.endpoint_id = ?", "e")).toEqual(["SEARCH tasks USING COVERING INDEX tasks_endpoint (endpoint_id=?)"]);
  });

  it("reads a function's counts, an account's list and a chain's size through their own indexes", async () => {
    expect(await planOf("select count(*) from tasks where (tasks.function_id = ? and tasks.issued_at >= ?)", "f", 1)).toEqual([
      "SEARCH tasks USING COVERING INDEX tasks_function (function_id=? AND issued_at>?)",
    ]);
    expect(await planOf("select id, issued_at, progress, status from tasks where tasks.account_id = ? order by tasks.id desc limit ?", "a", 20)).toEqual([
      "SEARCH tasks USING INDEX tasks_account (account_id=?)",
    ]);
    expect(await planOf("select count(*) from tasks where tasks.chain_id = ?", "c")).toEqual(["SEARCH tasks USING COVERING INDEX tasks_chain (chain_id=?)"]);
  });
});

describe("indexes of the archive's issue times (the week's counts of archived tasks)", () => {
  it("sums a function's and an endpoint's whole minutes from an index alone, and reads the cut minute by its key", async () => {
    const plan = (scope: { functionId?: string; endpointId?: string }) => {
      const q = new SQLiteAsyncDialect().sqlToQuery(sql`select ${archivedIssuedSince(scope, 1)}`);
      return planOf(q.sql, ...q.params);
    };
    for (const scope of [{ functionId: "f" }, { endpointId: "e" }]) {
      const details = await plan(scope);
      expect(details.filter((d) => /task_archive_minutes/.test(d))).toEqual([
        "SEARCH task_archive_minutes USING COVERING INDEX task_archive_minutes_scope (scope=? AND minute>?)",
        "SEARCH task_archive_minutes USING PRIMARY KEY (minute=? AND scope=?)",
      ]);
      expect(details.join("\n")).not.toMatch(/SCAN task_archive|TEMP B-TREE/);
    }
    // Pruning reads the head of the table's own key, nothing else.
    const pruning = new SQLiteAsyncDialect().sqlToQuery(archivedMinutesPruned(Date.now(), 100));
    const pruned = await planOf(pruning.sql, ...pruning.params);
    expect(pruned.filter((d) => /task_archive_minutes/.test(d))).toEqual(["SEARCH task_archive_minutes USING PRIMARY KEY (minute=? AND scope=?)", "SEARCH task_archive_minutes USING PRIMARY KEY (minute<?)"]);
  });
});

describe("indexes of the archive's per-day counts (an account's today and the console's chart)", () => {
  it("sums an account's archived tasks of a day, and reads its days since a date, from the table's own key (WITHOUT ROWID)", async () => {
    const q = new SQLiteAsyncDialect().sqlToQuery(sql`select ${archivedOnDay("a", 0)}`);
    expect((await planOf(q.sql, ...q.params)).filter((d) => /task_archive_counts/.test(d))).toEqual([
      "SEARCH task_archive_counts USING PRIMARY KEY (account_id=? AND day=?)",
    ]);
    expect(await planOf("select function_id, day, tasks from task_archive_counts where account_id = ? and day >= ?", "a", 0)).toEqual([
      "SEARCH task_archive_counts USING PRIMARY KEY (account_id=? AND day>?)",
    ]);
  });
});

describe("the archive's index of chunks (task_archive)", () => {
  it("finds a record's chunk, a list's chunks and a function's chunks through indexes, with no sort", async () => {
    const db = openDb(env as unknown as Bindings);
    const planOfQuery = (q: { toSQL(): { sql: string; params: unknown[] } }) => {
      const { sql: text, params } = q.toSQL();
      return planOf(text, ...params);
    };
    expect(await planOfQuery(chunksHolding(db, "a", "id"))).toEqual(["SEARCH task_archive USING INDEX task_archive_account (account_id=? AND last_id>?)"]);
    expect(await planOfQuery(pageChunks(db, { accountId: "a" }, "below"))).toEqual(["SEARCH task_archive USING INDEX task_archive_account (account_id=? AND last_id<?)"]);
    const fn = (await planOfQuery(pageChunks(db, { accountId: "a", functionId: "f", before: "b" }))).join("\n");
    expect(fn).toMatch(/SEARCH task_archive_functions USING PRIMARY KEY \(account_id=\? AND function_id=\?\)/);
    expect(fn).toMatch(/SEARCH task_archive USING INDEX task_archive_account \(account_id=\? AND last_id=\? AND first_id<\?\)/);
    expect(fn).not.toMatch(/SCAN|TEMP B-TREE/);
  });
});
