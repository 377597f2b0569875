import { env, runInDurableObject } from "cloudflare:test";
import { sql as statement } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ADMIN, call, callJson, clearQueue, markBuild, newAccount, newFunction, sql, uploadBuild } from "./helpers.js";
import { openDb, sqlBatch, type Db } from "../../worker/db/client.js";
import { closeFailureWindow, openFailureWindow, troubleState } from "../../worker/db/d1-trouble.js";
import { shardStub } from "../../worker/dispatch/client.js";
import type { Dispatcher } from "../../worker/dispatch/durable-object.js";
import { periodOf, type Plan } from "../../worker/billing/plans.js";
import { noSuccessfulBuild, type AdmissionLimits } from "../../worker/tasks/admission.js";
import { buildFor, type AdmissionFacts } from "../../worker/shard-admission/function-book.js";
import { ShardAdmission, type Admitted, type Refused } from "../../worker/shard-admission/leases.js";

beforeEach(clearQueue);

// The middle of this month: the tests move the clock by minutes and must stay in one billing period.
const today = new Date();
const NOW = Date.UTC(today.getUTCFullYear(), today.getUTCMonth(), 15, 12);
const PERIOD = periodOf(NOW);
const plan = (invocations: number): Plan => ({ id: "DEVELOPER", description: `DEVELOPER (${invocations} invocations)`, price: 10, currency: "usd", invocations });
const limits = (invocations: number, maxPending = 1000): AdmissionLimits => ({ plans: [plan(invocations)], maxPending });

/**
 * A ShardAdmission of its own on a fresh Dispatcher object (its SQLite storage), with the Db the
 * test chooses; every call runs inside that object, as the Dispatcher's own would.
 */
class Shard {
  private admission?: ShardAdmission;
  readonly name = `admission-test-${crypto.randomUUID()}`;
  constructor(
    private readonly db: Db,
    private readonly limits: AdmissionLimits,
  ) {}

  run<T>(f: (a: ShardAdmission) => T | Promise<T>): Promise<T> {
    const stub = env.DISPATCHER.get(env.DISPATCHER.idFromName(this.name));
    return runInDurableObject(stub, async (_o, state) => f((this.admission ??= new ShardAdmission(state.storage.sql, this.db, this.name, this.limits))));
  }

  /** Admits one task and waits for what it started in the background, so that the next call sees D1's answer. */
  admit(accountId: string, functionId: string, now = NOW): Promise<Admitted | Refused> {
    return this.run(async (a) => {
      const out = await a.admit(accountId, functionId, now);
      await a.whenIdle();
      return out;
    });
  }
}

const db = () => openDb(env);
const refusedCode = (r: Admitted | Refused) => ("refused" in r ? r.refused.code : "admitted");

/** A function of a new account with one successful build. */
async function deployed(name = "acme") {
  const { token, accountId } = await newAccount(name);
  const fn = await newFunction(token);
  const { id: build } = await uploadBuild(token, fn);
  await markBuild(build);
  return { token, accountId, fn, build };
}

/** Admits in turn on each shard until every one refuses; the admissions, and each shard's last refusal. */
async function admitUntilRefused(shards: Shard[], accountId: string, fn: string, now = NOW, o: { endEach?: boolean } = {}) {
  let admitted = 0;
  const refusals = new Map<Shard, Refused["refused"]>();
  for (let i = 0; refusals.size < shards.length && i < 500; i++) {
    const shard = shards[i % shards.length]!;
    if (refusals.has(shard)) continue;
    const r = await shard.admit(accountId, fn, now);
    if ("refused" in r) refusals.set(shard, r.refused);
    else admitted++;
    // The task ends at once (not yet settled): its slot is free, its invocation stays reserved.
    if (o.endEach && !("refused" in r)) await shard.run((a) => a.ended(accountId, r.period));
  }
  return { admitted, refusals: [...refusals.values()] };
}

const leaseRows = (accountId: string) =>
  env.DB.prepare("select shard, granted, settled, returned from invocation_leases where account_id = ? and period = ? order by shard").bind(accountId, PERIOD).all<{ shard: string; granted: number; settled: number; returned: number }>();
const meter = (taskId: string, accountId: string, fn: string) =>
  sql("insert into usage (task_id, account_id, function_id, period, finished_at, duration_ms, mem_mib) values (?, ?, ?, ?, ?, 10, 256)", `${taskId}#1`, accountId, fn, PERIOD, NOW);

describe("buildFor", () => {
  const facts = (release: AdmissionFacts["release"], newestBuildId: string | null = "newest"): AdmissionFacts => ({ fn: {} as AdmissionFacts["fn"], plan: "DEVELOPER", release, newestBuildId });

  it("runs the canary for its weight's share of rolls, else the pinned build, else the newest, as releasedBuild does", () => {
    const canary = facts({ buildId: "pinned", canaryBuildId: "canary", canaryWeight: 30 });
    expect(buildFor(canary, 0)).toBe("canary");
    expect(buildFor(canary, 29.99)).toBe("canary");
    expect(buildFor(canary, 30)).toBe("pinned");
    expect(buildFor(facts({ buildId: null, canaryBuildId: "canary", canaryWeight: 30 }), 50)).toBe("newest");
    expect(buildFor(facts({ buildId: null, canaryBuildId: null, canaryWeight: null }), 0)).toBe("newest");
    expect(buildFor(facts(null), 0)).toBe("newest");
    expect(buildFor(facts(null, null), 0)).toBeNull();
  });
});

describe("FunctionBook (through the Dispatcher's own admission)", () => {
  const shard0 = <T>(f: (a: ShardAdmission) => T | Promise<T>) => runInDurableObject(shardStub(env, 0), (o) => f((o as unknown as Dispatcher).admission));
  const buildOf = async (accountId: string, fn: string) => {
    const r = await shard0((a) => a.admit(accountId, fn, Date.now()));
    if ("refused" in r) throw new Error(JSON.stringify(r.refused));
    return r.buildId;
  };

  it("keeps a function's facts until it is told of a change: the release API, a build's end, the admissionChanged RPC", async () => {
    const { token, accountId, fn, build: first } = await deployed();
    const { id: second } = await uploadBuild(token, fn);
    await markBuild(second);
    expect(await buildOf(accountId, fn)).toBe(second);

    // Behind the shard's back (no notice): the cached facts still answer.
    await env.DB.prepare("insert into releases (function_id, account_id, build_id, updated_at) values (?, ?, ?, ?)").bind(fn, accountId, first, NOW).run();
    expect(await buildOf(accountId, fn)).toBe(second);
    await shardStub(env, 0).admissionChanged({ functionId: fn });
    expect(await buildOf(accountId, fn)).toBe(first);

    // The release API tells the shard before it answers.
    expect((await call(`/v1/function/${fn}/release`, { token, method: "PUT", json: { buildId: second, canary: { buildId: first, weight: 25 } } })).status).toBe(204);
    expect(await shard0((a) => a.functions.peek(fn)?.release)).toBeUndefined();
    await buildOf(accountId, fn);
    expect(await shard0((a) => a.functions.peek(fn)?.release)).toEqual({ buildId: second, canaryBuildId: first, canaryWeight: 25 });
    expect((await call(`/v1/function/${fn}/release`, { token, method: "PUT", json: { buildId: null } })).status).toBe(204);
    expect(await buildOf(accountId, fn)).toBe(second);

    // A build that ends (reported to this shard) or an eviction: the shard's own notice.
    const { id: third } = await uploadBuild(token, fn);
    // Behind the shard's back again (markBuild would tell it, as the build's report does).
    await env.DB.prepare("update builds set status = 'SUCCESS' where id = ?").bind(third).run();
    expect(await buildOf(accountId, fn)).toBe(second);
    await shard0((a) => a.buildEnded(fn));
    expect(await buildOf(accountId, fn)).toBe(third);
  });

  it("refuses another account's function and a deleted one with 404, and one without a runnable build with 409", async () => {
    const { token, accountId, fn, build } = await deployed();
    const other = await newAccount("other");
    const refusal = (acct: string, f: string) => shard0(async (a) => (await a.admit(acct, f, Date.now())) as Refused);
    expect((await refusal(other.accountId, fn)).refused).toEqual({ code: "not_found", message: "function not found" });

    const bare = await newFunction(token);
    expect((await refusal(accountId, bare)).refused).toEqual({ code: "no_successful_build", message: noSuccessfulBuild().message });
    // Its only build's artifact evicted: nothing left to run.
    await sql("update builds set evicted_at = ? where id = ?", NOW, build);
    await shard0((a) => a.buildEnded(fn));
    expect((await refusal(accountId, fn)).refused.code).toBe("no_successful_build");

    expect((await call(`/v1/function/${fn}`, { token, method: "DELETE" })).status).toBe(204);
    expect((await refusal(accountId, fn)).refused.code).toBe("not_found");
  });

  it("follows a plan change at once (PATCH /v1/admin/accounts tells every shard)", async () => {
    const { accountId, fn } = await deployed();
    await callJson(`/v1/admin/accounts/${accountId}`, 204, { token: ADMIN, method: "PATCH", json: { plan: "TINY" } });
    const now = Date.now();
    const admit = () => shard0(async (a) => {
      const r = await a.admit(accountId, fn, now);
      await a.whenIdle();
      return r;
    });
    expect(refusedCode(await admit())).toBe("admitted");
    expect(refusedCode(await admit())).toBe("admitted");
    const refused = (await admit()) as Refused;
    expect(refused.refused.code).toBe("quota_exhausted");
    expect(refused.refused.message).toMatch(/^the TINY \(2 invocations\) plan's invocations for \d{4}-\d\d are used up \(0 finished \+ 2 pending of 2\)/);
    await callJson(`/v1/admin/accounts/${accountId}`, 204, { token: ADMIN, method: "PATCH", json: { plan: "DEVELOPER" } });
    expect(refusedCode(await admit())).toBe("admitted");
  });
});

describe("ShardAdmission.admit: the plan's invocations", () => {
  it("admits exactly what the plan leaves across two shards, used invocations counted, then answers 402", async () => {
    const { accountId, fn } = await deployed();
    for (let i = 0; i < 6; i++) await meter(`used-${i}`, accountId, fn);
    const shards = [new Shard(db(), limits(40)), new Shard(db(), limits(40))];
    const { admitted, refusals } = await admitUntilRefused(shards, accountId, fn);
    expect(admitted).toBe(34);
    expect(refusals.map((r) => r.code)).toEqual(["quota_exhausted", "quota_exhausted"]);
    const rows = (await leaseRows(accountId)).results;
    expect(rows).toHaveLength(2);
    expect(rows.every((r) => r.granted > 0)).toBe(true);
    expect(rows.reduce((n, r) => n + r.granted - r.settled - r.returned, 0)).toBe(34);
  });
});

describe("ShardAdmission.admit: a burst", () => {
  it("admits 200 admissions arriving at once while the plan has room, and refuses the rest with 402, none with 409", async () => {
    const { accountId, fn } = await deployed();
    const shard = new Shard(db(), limits(150));
    const answers = await shard.run((a) => Promise.all(Array.from({ length: 200 }, () => a.admit(accountId, fn, NOW))));
    const codes = answers.map(refusedCode);
    expect(codes.filter((c) => c === "admitted")).toHaveLength(150);
    expect(new Set(codes.filter((c) => c !== "admitted"))).toEqual(new Set(["quota_exhausted"]));
    const rows = (await leaseRows(accountId)).results;
    expect(rows.reduce((n, r) => n + r.granted - r.settled - r.returned, 0)).toBe(150);
  });
});

describe("ShardAdmission.ended and settle", () => {
  it("gives back what ended unmetered once settled, counts metered ones as used, and settles once however often the batch runs", async () => {
    const { accountId, fn } = await deployed();
    const shard = new Shard(db(), limits(10));
    expect((await admitUntilRefused([shard], accountId, fn)).admitted).toBe(10);

    // Five tasks end: three cancelled (not metered), two metered in the batch that settles them.
    const batch = await shard.run((a) => {
      for (let i = 0; i < 5; i++) a.ended(accountId, PERIOD, `t${i}`);
      return a.settle()!;
    });
    const usage = [0, 1].map((i) => statement`insert into usage (task_id, account_id, function_id, period, finished_at, duration_ms, mem_mib) values (${`t${i}#1`}, ${accountId}, ${fn}, ${PERIOD}, ${NOW}, 10, 256)`);
    await sqlBatch(db(), [...batch.statements, ...usage]);
    const once = (await leaseRows(accountId)).results;
    // A retried batch (D1 committed, the answer was lost) changes nothing.
    await sqlBatch(db(), batch.statements);
    expect((await leaseRows(accountId)).results).toEqual(once);
    expect(once[0]).toMatchObject({ granted: 10, settled: 5 });
    await shard.run((a) => {
      batch.committed();
      batch.committed();
      expect(a.settle()).toBeNull();
    });

    // Past the refusal's recheck: exactly the three unmetered invocations are free again.
    expect((await admitUntilRefused([shard], accountId, fn, NOW + 5_000)).admitted).toBe(3);
  });
});

describe("ShardAdmission.refresh", () => {
  it("gives back what an idle shard holds, invocations and slots, for the account's other shards", async () => {
    const { accountId, fn } = await deployed();
    const [a, b] = [new Shard(db(), limits(40)), new Shard(db(), limits(40))];
    for (let i = 0; i < 10; i++) expect(refusedCode(await a.admit(accountId, fn))).toBe("admitted");
    const heldByA = (await leaseRows(accountId)).results[0]!.granted;
    expect(heldByA).toBeGreaterThan(10);
    const first = await admitUntilRefused([b], accountId, fn);
    expect(first.admitted).toBe(40 - heldByA);

    // A's tasks end (not yet settled) and A sees no new one for three minutes: it keeps nothing.
    const later = NOW + 3 * 60_000;
    await a.run(async (s) => {
      for (let i = 0; i < 10; i++) s.ended(accountId, PERIOD);
      await s.refresh(later);
      await s.whenIdle();
    });
    const aRow = (await leaseRows(accountId)).results.find((r) => r.shard === a.name)!;
    expect(aRow).toMatchObject({ granted: heldByA, returned: heldByA - 10 });
    const slots = await env.DB.prepare("select held from slot_leases where account_id = ? and shard = ?").bind(accountId, a.name).first<{ held: number }>();
    expect(slots!.held).toBe(0);
    // The ten A admitted stay reserved until they settle; the rest is B's now.
    expect((await admitUntilRefused([b], accountId, fn, later)).admitted).toBe(heldByA - 10);
  });
});

describe("ShardAdmission.admit: the pending cap", () => {
  it("holds an account to its cap across two shards (429 with Retry-After), and an ended task frees its slot at once", async () => {
    const { accountId, fn } = await deployed();
    const shards = [new Shard(db(), limits(100_000, 20)), new Shard(db(), limits(100_000, 20))];
    const { admitted, refusals } = await admitUntilRefused(shards, accountId, fn);
    expect(admitted).toBe(20);
    expect(refusals).toEqual([
      { code: "too_many_pending_tasks", message: "the account has 20 unfinished tasks, its limit; new ones are accepted as those finish", headers: { "Retry-After": "10" } },
      expect.objectContaining({ code: "too_many_pending_tasks" }),
    ]);
    const held = await env.DB.prepare("select sum(held) as n from slot_leases where account_id = ?").bind(accountId).first<{ n: number }>();
    expect(held!.n).toBe(20);

    const [a] = shards;
    const full = await a!.run((s) => s.admit(accountId, fn, NOW));
    expect(refusedCode(full)).toBe("too_many_pending_tasks");
    await a!.run((s) => s.ended(accountId, PERIOD));
    expect(refusedCode(await a!.admit(accountId, fn))).toBe("admitted");
    expect(refusedCode(await a!.admit(accountId, fn))).toBe("too_many_pending_tasks");
  });
});

describe("ShardAdmission.admit while D1 fails", () => {
  afterEach(() => closeFailureWindow());

  it("admits one borrowed chunk beyond the lease, then answers 503, and D1 counts the borrowed tasks once it is back", async () => {
    const { accountId, fn } = await deployed();
    const shard = new Shard(openDb({ DB: env.DB, D1_TEST_FAILURES: "1" }), limits(40));
    expect(refusedCode(await shard.admit(accountId, fn))).toBe("admitted"); // the first lease: one chunk of 16
    openFailureWindow(60_000, "refuse");
    // Each task ends at once, so only the invocations bind (the slots are borrowed the same way).
    const during = await admitUntilRefused([shard], accountId, fn, NOW, { endEach: true });
    expect(during.admitted).toBe(15 + 16);
    expect(during.refusals[0]).toMatchObject({ code: "storage_unavailable", headers: { "Retry-After": "5" } });
    expect(troubleState().failed).toBeGreaterThan(0);

    closeFailureWindow();
    // D1 is back: the 32 admitted count as granted whatever the limit, and the plan's last 8 remain.
    const after = await admitUntilRefused([shard], accountId, fn, NOW + 5_000, { endEach: true });
    expect(after.admitted).toBe(8);
    expect(after.refusals[0]!.code).toBe("quota_exhausted");
    expect((await leaseRows(accountId)).results[0]).toMatchObject({ granted: 40, settled: 0, returned: 0 });
  });
});

describe("ShardAdmission.admit when D1 committed a grant and its answer was lost", () => {
  afterEach(() => closeFailureWindow());

  it("counts the lost grant once: what the shard borrowed meanwhile is the same invocations", async () => {
    const { accountId, fn } = await deployed();
    const shard = new Shard(openDb({ DB: env.DB, D1_TEST_FAILURES: "1" }), limits(40));
    // The facts are read; the lease's batch commits (16 granted) and its answer is lost.
    openFailureWindow(60_000, "lose_answer", 1);
    const during = await admitUntilRefused([shard], accountId, fn, NOW, { endEach: true });
    expect(during.admitted).toBe(16);
    expect(during.refusals[0]!.code).toBe("storage_unavailable");
    expect((await leaseRows(accountId)).results[0]).toMatchObject({ granted: 16 });

    closeFailureWindow();
    const after = await admitUntilRefused([shard], accountId, fn, NOW + 5_000, { endEach: true });
    expect(during.admitted + after.admitted).toBe(40);
    expect((await leaseRows(accountId)).results[0]).toMatchObject({ granted: 40 });
  });
});

describe("ShardAdmission.admit in the steady state", () => {
  it("asks D1 once for the facts and once for the lease, then admits without any D1 round trip", async () => {
    const { accountId, fn } = await deployed();
    // A delay of 1 ms makes every D1 round trip of this Db countable (troubleState().delayed).
    const shard = new Shard(openDb({ DB: env.DB, D1_DELAY_MS: "1" }), limits(100_000));
    const start = troubleState().delayed;
    expect(refusedCode(await shard.admit(accountId, fn))).toBe("admitted");
    expect(troubleState().delayed - start).toBe(2);
    const warm = troubleState().delayed;
    for (let i = 0; i < 6; i++) expect(refusedCode(await shard.admit(accountId, fn))).toBe("admitted");
    expect(troubleState().delayed).toBe(warm);
  });
});
