import { env, runInDurableObject } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { shardStub } from "../../worker/dispatch/client.js";
import type { Dispatcher } from "../../worker/dispatch/durable-object.js";
import { distinctIssues, IssueCounts, type Issue } from "../../worker/shard-history/issue-counts.js";
import { newId } from "../../worker/lib/ids.js";
import { stored } from "../../worker/shard-history/id-bytes.js";
import { HOUR_MS, startOfUtcDay } from "../../worker/lib/time.js";
import { WEEK_MS } from "../../worker/task-history/window.js";
import { call, callJson, clearQueue, deployedFunction, newAccount, newEndpoint, newFunction, recordsFlushed } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";

/**
 * Step 3 of the shard-resident history (docs/dispatch.md): a shard counts the issue of every task of
 * its functions, per function and per endpoint, exactly enough for a count from any millisecond of
 * the last week. What it counts must be what D1's rows count.
 */

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const shardIssued = (scopeId: string, from: number) =>
  runInDurableObject(shardStub(env, 0), (o) => (o as unknown as Dispatcher).issues.issuedSince(scopeId, from));

/** A fresh store in an object of its own (not a shard: nothing else writes there). */
function inScratch<T>(name: string, f: (sql: SqlStorage) => T): Promise<T> {
  return runInDurableObject(env.DISPATCHER.get(env.DISPATCHER.idFromName(`issue-counts-${name}`)), (_o, state) => {
    for (const t of ["shard_issue_scope", "shard_issue_hour", "shard_issue_second", "shard_issue_since", "shard_issue_accounts_since"]) state.storage.sql.exec(`drop table if exists ${t}`);
    return f(state.storage.sql);
  });
}

/** The account of the scratch stores' issues. */
const acct = newId();

const brute = (issues: Issue[], scopeId: string, from: number) =>
  issues.filter((i) => (i.functionId === scopeId || i.endpointId === scopeId) && i.issuedAt >= from).length;

describe("a shard's count of the tasks it issued", () => {
  it("is D1's count of a function's and an endpoint's tasks, today and over the week", async () => {
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const ep = await newEndpoint(token, fn);
    const before = Date.now();
    for (let i = 0; i < 3; i++) await callJson(`/v1/task/${fn}`, 201, { token, json: { i } });
    for (let i = 0; i < 2; i++) await callJson(`/gc/${ep}`, 201, { token: null, json: { i } });
    await recordsFlushed();
    const now = Date.now();
    for (const from of [before - 1, startOfUtcDay(now), now - WEEK_MS]) {
      const d1 = async (column: string, id: string) =>
        (await env.DB.prepare(`select count(*) as n from tasks where ${column} = ? and issued_at >= ?`).bind(id, from).first<{ n: number }>())!.n;
      expect(await shardIssued(fn, from)).toBe(await d1("function_id", fn));
      expect(await shardIssued(ep, from)).toBe(await d1("endpoint_id", ep));
    }
    const [account, today] = [(await env.DB.prepare("select account_id as a from functions where id = ?").bind(fn).first<{ a: string }>())!.a, startOfUtcDay(now)];
    const d1Today = (await env.DB.prepare("select count(*) as n from tasks where account_id = ? and issued_at >= ?").bind(account, today).first<{ n: number }>())!.n;
    expect(d1Today).toBe(5);
    expect(await runInDurableObject(shardStub(env, 0), (o) => (o as unknown as Dispatcher).issues.issuedInHoursSince(account, today))).toBe(d1Today);
    expect(await shardIssued(fn, before - 1)).toBe(5);
    expect(await shardIssued(ep, before - 1)).toBe(2);
    // From the last task's millisecond on, only it and those issued in that same millisecond.
    const last = (await env.DB.prepare("select max(issued_at) as t from tasks where function_id = ?").bind(fn).first<{ t: number }>())!.t;
    expect(await shardIssued(fn, last + 1)).toBe(0);
    expect(await shardIssued(fn, last)).toBeGreaterThanOrEqual(1);
  });

  it("counts a task its shard refused not at all", async () => {
    const { token } = await newAccount();
    // Never built: the shard's admission refuses its tasks.
    const fn = await newFunction(token);
    const before = Date.now();
    const res = await call(`/v1/task/${fn}`, { token, method: "POST", json: {} });
    expect(res.status).toBeGreaterThanOrEqual(400);
    await res.arrayBuffer();
    expect(await shardIssued(fn, before - 1)).toBe(0);
  });
});

describe("issuedSince", () => {
  it("is exact from every millisecond around the cuts of a second and of an hour", async () => {
    const base = Math.floor(Date.now() / HOUR_MS) * HOUR_MS - 3 * HOUR_MS;
    const fn = newId();
    const ep = newId();
    // Issues on both sides of an hour's edge and a second's, several in one millisecond, and some through an endpoint.
    const times = [base - 1, base, base, base + 1, base + 999, base + 1_000, base + 1_001, base + HOUR_MS - 1, base + HOUR_MS, base + HOUR_MS + 500, base + 2 * HOUR_MS + 7];
    const issues: Issue[] = times.map((issuedAt, i) => ({ accountId: acct, functionId: fn, endpointId: i % 3 === 0 ? ep : null, issuedAt }));
    const froms = [base - 2, ...times.flatMap((t) => [t - 1, t, t + 1]), base + 2 * HOUR_MS + 8];
    const answers = await inScratch("exact", (sql) => {
      const counts = new IssueCounts(sql, base + 3 * HOUR_MS, () => []);
      for (const issue of issues) counts.issued(issue, base + 3 * HOUR_MS);
      return froms.map((from) => [counts.issuedSince(fn, from), counts.issuedSince(ep, from)]);
    });
    expect(answers).toEqual(froms.map((from) => [brute(issues, fn, from), brute(issues, ep, from)]));
  });

  it("counts a busy second's thousand issues, each in its millisecond", async () => {
    const second = Math.floor(Date.now() / 1000) * 1000 - 60_000;
    const fn = newId();
    const answers = await inScratch("busy", (sql) => {
      const counts = new IssueCounts(sql, second + 1000, () => []);
      for (let ms = 0; ms < 1000; ms++) counts.issued({ accountId: acct, functionId: fn, issuedAt: second + ms }, second + 1000);
      return [0, 1, 31, 32, 500, 998, 999, 1000].map((ms) => counts.issuedSince(fn, second + ms));
    });
    expect(answers).toEqual([1000, 999, 969, 968, 500, 2, 1, 0]);
  });
});

describe("pruning", () => {
  it("drops the hours wholly past the week with their seconds, and no count of the week changes", async () => {
    // Half past an hour: the week's start cuts its hour in the middle, on a whole second.
    const now = Math.floor(Date.now() / HOUR_MS) * HOUR_MS + HOUR_MS / 2;
    const fn = newId();
    const issues: Issue[] = [now - WEEK_MS - 2 * HOUR_MS, now - WEEK_MS - 1, now - WEEK_MS, now - WEEK_MS + 1, now - HOUR_MS].map((issuedAt) => ({ accountId: acct, functionId: fn, issuedAt }));
    const [dropped, rows, week, after] = await inScratch("prune", (sql) => {
      const counts = new IssueCounts(sql, now, () => []);
      for (const issue of issues) counts.issued(issue, now - WEEK_MS * 2);
      const week = counts.issuedSince(fn, now - WEEK_MS);
      const dropped = counts.prune(now, true);
      const rows = sql.exec("select count(*) as n from shard_issue_second").one().n;
      return [dropped, rows, week, counts.issuedSince(fn, now - WEEK_MS)];
    });
    expect(week).toBe(3);
    expect(after).toBe(3);
    // The hour two hours before the week's start went (the function's and its account's); the hour
    // the week's start cuts stays, with its seconds.
    expect(dropped).toBe(2);
    // Left: the second before the week's start and its own (two issues), and the one an hour ago.
    expect(rows).toBe(3);
  });
});

describe("the first count of a shard", () => {
  it("counts the tasks it holds and the finished records it keeps, each once, and then every task it issues", async () => {
    const now = Date.now();
    const fn = newId();
    const ep = newId();
    // Several in one second and one hour (added up before they are written), some through an endpoint.
    const at = (ms: number, i: number) => ({ id: newId(ms), accountId: acct, functionId: fn, endpointId: i % 2 ? ep : null, issuedAt: ms });
    const held = [1, 2, 3, 1_500, 2 * HOUR_MS].map((ago, i) => at(now - ago, i));
    const kept = [held[2]!, held[3]!, at(now - 40, 5), at(now - 41, 6)];
    const old = at(now - WEEK_MS - 1, 7);
    const counted = [...held, ...kept.slice(2)];
    const froms = [now - WEEK_MS - 10, ...counted.flatMap((i) => [i.issuedAt, i.issuedAt + 1])];
    const [first, since, again] = await inScratch("first", (sql) => {
      const counts = new IssueCounts(sql, now, () => distinctIssues(held, [...kept, old]));
      const first = froms.map((from) => [counts.issuedSince(fn, from), counts.issuedSince(ep, from)]);
      counts.issued({ accountId: acct, functionId: fn, issuedAt: now + 1 }, now + 1);
      // A later instance over the same storage counts nothing again.
      const later = new IssueCounts(sql, now + 5, () => distinctIssues(held, kept));
      return [first, later.since, later.issuedSince(fn, now - WEEK_MS - 10)];
    });
    expect(first).toEqual(froms.map((from) => [brute(counted, fn, from), brute(counted, ep, from)]));
    expect(brute(counted, fn, now - WEEK_MS - 10)).toBe(7);
    expect(since).toBe(now);
    expect(again).toBe(8);
  });
});

describe("issuedInHoursSince", () => {
  it("counts an account's issues of every function and endpoint from a whole hour, and nothing else", async () => {
    const now = Math.floor(Date.now() / HOUR_MS) * HOUR_MS + 1_234;
    const [fn, fn2, ep, other] = [newId(), newId(), newId(), newId()];
    const times = [now - 3 * HOUR_MS - 1, now - 3 * HOUR_MS, now - 2 * HOUR_MS + 5, now - HOUR_MS, now - 1, now];
    const issues: Issue[] = times.flatMap((issuedAt, i) => [
      { accountId: acct, functionId: i % 2 ? fn : fn2, endpointId: i % 3 ? null : ep, issuedAt },
      { accountId: other, functionId: newId(), issuedAt },
    ]);
    const hours = [4, 3, 2, 1, 0].map((h) => Math.floor(now / HOUR_MS) * HOUR_MS - h * HOUR_MS);
    const answers = await inScratch("account-hours", (sql) => {
      const counts = new IssueCounts(sql, now, () => []);
      for (const issue of issues) counts.issued(issue, now);
      // An account's hours take no seconds: only its functions' and endpoint's do.
      const seconds = sql.exec("select count(*) as n from shard_issue_second").one().n;
      return { counts: hours.map((h) => counts.issuedInHoursSince(acct, h)), seconds, stranger: counts.issuedInHoursSince(newId(), hours[0]!) };
    });
    expect(answers.counts).toEqual(hours.map((h) => times.filter((t) => t >= h).length));
    expect(answers.seconds).toBe(times.length * 2 + times.filter((_, i) => i % 3 === 0).length);
    expect(answers.stranger).toBe(0);
    await expect(inScratch("account-hours-cut", (sql) => new IssueCounts(sql, now, () => []).issuedInHoursSince(acct, now))).rejects.toThrow(/whole hour/);
  });

  it("is counted once, from the tasks a shard holds and keeps, by a shard that counted functions before accounts", async () => {
    const now = Date.now();
    const fn = newId();
    const at = (ago: number) => ({ id: newId(now - ago), accountId: acct, functionId: fn, issuedAt: now - ago });
    const held = [at(1), at(2), at(HOUR_MS / 2)];
    const kept = [held[1]!, at(40), at(41)];
    const hour = Math.floor((now - HOUR_MS) / HOUR_MS) * HOUR_MS;
    const [before, first, again, fnCount] = await inScratch("account-first", (sql) => {
      new IssueCounts(sql, now, () => distinctIssues(held, kept));
      // As a shard that ran step 3 before accounts were counted: no account hours, no marker.
      sql.exec("delete from shard_issue_hour where scope = (select n from shard_issue_scope where id = ?)", stored(acct));
      sql.exec("drop table shard_issue_accounts_since");
      const restarted = new IssueCounts(sql, now + 10, () => []);
      const before = restarted.issuedInHoursSince(acct, hour);
      sql.exec("drop table shard_issue_accounts_since");
      const upgraded = new IssueCounts(sql, now + 20, () => distinctIssues(held, kept));
      const first = upgraded.issuedInHoursSince(acct, hour);
      upgraded.issued(at(0), now + 20);
      const again = new IssueCounts(sql, now + 30, () => distinctIssues(held, kept));
      return [before, first, again.issuedInHoursSince(acct, hour), again.issuedSince(fn, now - WEEK_MS)];
    });
    expect(before).toBe(0);
    expect(first).toBe(5);
    expect(again).toBe(6);
    // The functions' counts were not added again.
    expect(fnCount).toBe(6);
  });
});
