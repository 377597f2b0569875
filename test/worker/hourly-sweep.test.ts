import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ARCHIVE_CRON, SWEEP_CRON } from "../../worker/crons.js";
import { DAY_MS } from "../../worker/lib/time.js";
import { callJson, clearQueue, deployedFunction, finishTask, flushedDb, newAccount, newTask, runCron } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";

/**
 * The hourly sweep (worker/sweep/hourly.ts) and the archive sweep (worker/sweep/archive-sweep.ts)
 * each make at most SWEEP_D1_QUERIES D1 queries in their invocation (D1 fails every query past
 * 1,000 an invocation); what one leaves, later runs take up.
 */

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

/** The test's D1 binding, counting round trips (a statement's first/all/run/raw, a batch), and failing those whose SQL matches `fail`. */
function countedD1(fail?: RegExp) {
  const d1 = env.DB;
  const own = new WeakMap<object, D1PreparedStatement>();
  let queries = 0;
  const trip = <T>(sqls: string[], call: () => Promise<T>) => {
    queries++;
    if (fail && sqls.some((s) => fail.test(s))) return Promise.reject(new Error("D1_ERROR: a test's failure"));
    return call();
  };
  const statement = (stmt: D1PreparedStatement, sql: string): D1PreparedStatement => {
    const wrapped = {
      bind: (...values: unknown[]) => statement(stmt.bind(...values), sql),
      first: (col?: string) => trip([sql], () => (col === undefined ? stmt.first() : stmt.first(col))),
      run: () => trip([sql], () => stmt.run()),
      all: () => trip([sql], () => stmt.all()),
      raw: (o?: { columnNames?: boolean }) => trip([sql], () => (o?.columnNames ? stmt.raw({ columnNames: true }) : stmt.raw())),
      sql,
    } as unknown as D1PreparedStatement;
    own.set(wrapped, stmt);
    return wrapped;
  };
  const db = {
    prepare: (sql: string) => statement(d1.prepare(sql), sql),
    batch: (stmts: D1PreparedStatement[]) =>
      trip(
        stmts.map((s) => (s as unknown as { sql: string }).sql),
        () => d1.batch(stmts.map((s) => own.get(s) ?? s)),
      ),
    exec: (q: string) => trip([q], () => d1.exec(q)),
    withSession: (c?: string) => d1.withSession(c),
    dump: () => d1.dump(),
  } as unknown as D1Database;
  return { db, queries: () => queries };
}

const inD1 = async (accountId: string) => (await env.DB.prepare("select count(*) n from tasks where account_id = ?").bind(accountId).first<number>("n")) ?? 0;

/** Accounts with two finished tasks each, all in D1. */
async function accountsWithHistory(n: number) {
  const out: { token: string; accountId: string; list: unknown }[] = [];
  for (let i = 0; i < n; i++) {
    const { token, accountId } = await newAccount();
    const fn = await deployedFunction(token);
    for (let t = 0; t < 2; t++) await finishTask(await newTask(token, fn), { body: `r${t}` });
    out.push({ token, accountId, list: undefined });
  }
  await flushedDb();
  for (const a of out) a.list = await callJson("/v1/task/list", 200, { token: a.token });
  return out;
}

const sweeps = [
  ["the hourly sweep", SWEEP_CRON],
  ["the archive sweep", ARCHIVE_CRON],
] as const;

describe("the hourly sweep and the archive sweep", () => {
  it("make no more D1 queries than SWEEP_D1_QUERIES each, and later runs finish what one leaves", async () => {
    const accounts = await accountsWithHistory(4);
    const at = Date.now() + 9 * DAY_MS; // past the archive's window (1 day) and its hold (7)
    const perRun: number[] = [];
    while (perRun.length < 40 && (await Promise.all(accounts.map((a) => inD1(a.accountId)))).some((n) => n > 0)) {
      for (const [, cron] of sweeps) {
        const d1 = countedD1();
        await runCron(cron, at, { DB: d1.db, SWEEP_D1_QUERIES: "4" });
        perRun.push(d1.queries());
      }
    }
    expect(Math.max(...perRun)).toBeLessThanOrEqual(4);
    // Four queries move every account past the hold after archive retention's look: a look, one read of
    // them all and one batch (archiver.ts, HOLD_ACCOUNTS_A_READ), where a read and a batch each took a run an account.
    expect(perRun.length / sweeps.length).toBe(1);
    for (const a of accounts) {
      expect(await inD1(a.accountId)).toBe(0);
      expect(await callJson("/v1/task/list", 200, { token: a.token })).toEqual(a.list);
    }
  });
});

describe("the hourly sweep", () => {
  it("runs its other parts when one fails", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const id = await newTask(token, fn);
    await finishTask(id, { body: "kept a while" });
    await flushedDb();
    // Every query of the orphan sweep (the first part: unfinished tasks, by issue) fails; retention, the last, still runs.
    const d1 = countedD1(/"finished_at" is null and "tasks"."issued_at" </);
    await runCron(SWEEP_CRON, Date.now() + 31 * DAY_MS, { DB: d1.db });
    expect(await env.DB.prepare("select purged_at is not null p from tasks where id = ?").bind(id).first("p")).toBe(1);
  });
});

describe("the archive sweep", () => {
  it("runs the move when the archive's retention fails", async () => {
    const [a] = await accountsWithHistory(1);
    // Every query of archive retention (the first part: chunks by purge_due) fails.
    const d1 = countedD1(/"purge_due" </);
    await runCron(ARCHIVE_CRON, Date.now() + 9 * DAY_MS, { DB: d1.db });
    expect(await inD1(a!.accountId)).toBe(0);
    expect(await callJson("/v1/task/list", 200, { token: a!.token })).toEqual(a!.list);
  });
});
