import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { SQLiteAsyncDialect } from "drizzle-orm/sqlite-core";
import { dailyTasks } from "../../worker/console/queries.js";
import { openDb } from "../../worker/db/client.js";
import { QueryBudget } from "../../worker/db/query-budget.js";
import type { Bindings } from "../../worker/env.js";
import { DAY_MS, startOfUtcDay } from "../../worker/lib/time.js";
import { archiveTasks } from "../../worker/task-history/archiver.js";
import { ARCHIVED_DAYS_READ, archivedDaysPruned } from "../../worker/task-history/counts.js";
import { archiveAfterMs } from "../../worker/task-history/window.js";
import { clearQueue, deployedFunction, finishTask, flushedDb, newAccount, newTask } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";

/**
 * Issue 27: the archive's per-day counts (`task_archive_counts`, a row per function and UTC day of
 * issue) serve the console's daily charts and an account's tasks of today. No read reaches past 30
 * days, so the move deletes its accounts' older days: an account's counts stay about a month of
 * rows, not a row per function for every day of its history.
 */

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const bindings = env as unknown as Bindings;
const db = () => openDb(bindings);
/** Past the window and the hold (7 days) of a small account's records. */
const PAST = Date.now() + 9 * DAY_MS;
const today = startOfUtcDay(PAST);

/** The account's per-day counts as [days before PAST's day, tasks], oldest first. */
const days = async (accountId: string) =>
  (await env.DB.prepare("select day, tasks from task_archive_counts where account_id = ? order by day").bind(accountId).all<{ day: number; tasks: number }>()).results.map(
    (r) => [(today - r.day) / DAY_MS, r.tasks],
  );

/** The account's tasks in D1 per UTC day of issue, as the move will count them. */
const issuedDays = async (accountId: string) =>
  (
    await env.DB.prepare("select (? - (issued_at - issued_at % ?)) / ? as ago, count(*) as n from tasks where account_id = ? group by 1 order by 1 desc")
      .bind(today, DAY_MS, DAY_MS, accountId)
      .all<{ ago: number; n: number }>()
  ).results.map((r) => [r.ago, r.n]);

/** An account with `tasks` finished tasks of now, and archived counts `daysAgo` (before PAST's day) of one task each. */
async function accountWith(tasks: number, daysAgo: number[]) {
  const { token, accountId } = await newAccount();
  const fn = await deployedFunction(token);
  for (let i = 0; i < tasks; i++) await finishTask(await newTask(token, fn));
  for (const ago of daysAgo)
    await env.DB.prepare("insert into task_archive_counts (account_id, function_id, day, tasks) values (?, ?, ?, 1)").bind(accountId, fn, today - ago * DAY_MS).run();
  return { accountId, fn };
}

describe("the archive's move, for the per-day counts", () => {
  it("deletes its accounts' days before the last 30 and one more, keeps the rest, and changes no chart", async () => {
    const moved = [await accountWith(2, [45, 31, 30, 29, 5]), await accountWith(1, [31, 12])];
    const idle = await accountWith(0, [45, 31]);
    await flushedDb();
    const charts = async () => Promise.all(moved.map((a) => dailyTasks(bindings, db(), a.accountId, ARCHIVED_DAYS_READ, PAST)));
    const before = await charts();
    const [issued0, issued1] = [await issuedDays(moved[0]!.accountId), await issuedDays(moved[1]!.accountId)];

    expect(await archiveTasks(db(), env.BUCKET, archiveAfterMs(bindings), PAST, { budget: new QueryBudget(1000) })).toBeGreaterThanOrEqual(3);

    // The moved tasks were issued about 9 days before PAST's day.
    expect(await days(moved[0]!.accountId)).toEqual([[30, 1], [29, 1], ...issued0, [5, 1]]);
    expect(await days(moved[1]!.accountId)).toEqual([[12, 1], ...issued1]);
    // An account the move did not touch keeps its rows until its next move.
    expect(await days(idle.accountId)).toEqual([[45, 1], [31, 1]]);
    expect(await charts()).toEqual(before);
    expect(before[0]!.total.map((d) => d.count).reduce((a, b) => a + b)).toBe(4);
  });
});

describe("archivedDaysPruned", () => {
  it("reads only the account's rows it deletes, through the table's key", async () => {
    const [statement] = archivedDaysPruned(["acct-a", "acct-b"], PAST);
    const q = new SQLiteAsyncDialect().sqlToQuery(statement!);
    const plan = (await env.DB.prepare(`explain query plan ${q.sql}`).bind(...q.params).all<{ detail: string }>()).results.map((r) => r.detail);
    expect(plan).toContain("SEARCH task_archive_counts USING PRIMARY KEY (account_id=? AND day<?)");
    expect(plan.some((d) => /SCAN task_archive_counts/.test(d))).toBe(false);
  });
});

describe("dailyTasks", () => {
  it("refuses a chart longer than the days the archive keeps", async () => {
    const { accountId } = await newAccount();
    await expect(dailyTasks(bindings, db(), accountId, ARCHIVED_DAYS_READ + 1)).rejects.toThrow(RangeError);
  });
});
