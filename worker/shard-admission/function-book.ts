import { eq, getTableColumns } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { accounts, functions, releases } from "../db/schema.js";
import type { FunctionRow } from "../db/rows.js";
import { newestBuild } from "../releases/resolve.js";

/** What admission needs to know about a function, cached in its shard (see docs/dispatch.md, "Admission in the shard"). */
export interface AdmissionFacts {
  fn: FunctionRow;
  /** The account's plan id (accounts.plan). */
  plan: string;
  /** The function's release row; null when it has none (it follows its newest runnable build). */
  release: { buildId: string | null; canaryBuildId: string | null; canaryWeight: number | null } | null;
  /** The newest runnable build (RUNNABLE in releases/resolve.ts). */
  newestBuildId: string | null;
}

/**
 * The build one new task runs: the canary for `canaryWeight` percent of rolls, else the pinned
 * build, else the newest runnable one — releasedBuild() in releases/resolve.ts line for line (a
 * release with neither, or whose pick is null, falls through to the newest).
 */
export function buildFor(f: AdmissionFacts, roll = Math.random() * 100): string | null {
  const r = f.release;
  if (r) {
    const pick = r.canaryBuildId !== null && r.canaryWeight !== null && roll < r.canaryWeight ? r.canaryBuildId : r.buildId;
    if (pick !== null) return pick;
  }
  return f.newestBuildId;
}

/** A safety net only: invalidation (changed, changedAccount) is what keeps the book right. */
export const DEFAULT_FACTS_TTL_MS = 60_000;
/** Functions remembered per shard; the least recently loaded go first beyond it. */
const MAX_FUNCTIONS = 10_000;

interface Entry {
  facts: AdmissionFacts | null;
  loadedAt: number;
}

/**
 * The shard's book of admission facts, one D1 round trip per function on a miss. An entry older
 * than the TTL is still answered from, while one reload runs behind it: the path never waits on D1
 * for a function it knows. A load that began before an invalidation of its function (or of any
 * account) is answered but not kept, so a change can never be overwritten by what it replaced.
 */
export class FunctionBook {
  private readonly entries = new Map<string, Entry>();
  private readonly loading = new Map<string, Promise<AdmissionFacts | null>>();
  /** Invalidations per function, and of accounts in all: a load keeps its answer only if neither moved. */
  private readonly generations = new Map<string, number>();
  private accountGeneration = 0;

  constructor(
    private readonly db: Db,
    private readonly ttlMs = DEFAULT_FACTS_TTL_MS,
  ) {}

  /** Cached facts; on a miss one D1 round trip (concurrent misses share it). null: no such function. */
  async get(functionId: string, now: number): Promise<AdmissionFacts | null> {
    const e = this.entries.get(functionId);
    if (e) {
      if (now - e.loadedAt >= this.ttlMs && !this.loading.has(functionId)) void this.load(functionId, now).catch(() => undefined);
      return e.facts;
    }
    return this.loading.get(functionId) ?? this.load(functionId, now);
  }

  /** The facts if known, without D1: what a synchronous path may use. */
  peek(functionId: string): AdmissionFacts | null | undefined {
    return this.entries.get(functionId)?.facts;
  }

  /** Forget the function (it, its release, its builds or its account's plan changed). */
  changed(functionId: string): void {
    this.entries.delete(functionId);
    this.loading.delete(functionId);
    this.generations.set(functionId, (this.generations.get(functionId) ?? 0) + 1);
  }

  /** Forget every function of the account (its plan changed, a grant turned a need off, or it was deleted). */
  changedAccount(accountId: string): void {
    this.accountGeneration++;
    for (const [id, e] of this.entries) if (e.facts?.fn.accountId === accountId) this.entries.delete(id);
    for (const id of this.loading.keys()) this.loading.delete(id);
  }

  private load(functionId: string, now: number): Promise<AdmissionFacts | null> {
    const generation = this.generations.get(functionId) ?? 0;
    const accounts = this.accountGeneration;
    const loading = readFacts(this.db, functionId).then(
      (facts) => {
        if (this.loading.get(functionId) === loading) this.loading.delete(functionId);
        if ((this.generations.get(functionId) ?? 0) === generation && this.accountGeneration === accounts) this.keep(functionId, { facts, loadedAt: now });
        return facts;
      },
      (err: unknown) => {
        if (this.loading.get(functionId) === loading) this.loading.delete(functionId);
        throw err;
      },
    );
    this.loading.set(functionId, loading);
    return loading;
  }

  private keep(functionId: string, e: Entry): void {
    this.entries.delete(functionId);
    this.entries.set(functionId, e);
    if (this.entries.size > MAX_FUNCTIONS) this.entries.delete(this.entries.keys().next().value!);
  }
}

/** The function's row, its account's plan, its release and its newest runnable build: one select. */
async function readFacts(db: Db, functionId: string): Promise<AdmissionFacts | null> {
  const [row] = await db
    .select({
      fn: getTableColumns(functions),
      plan: accounts.plan,
      released: releases.functionId,
      buildId: releases.buildId,
      canaryBuildId: releases.canaryBuildId,
      canaryWeight: releases.canaryWeight,
      newestBuildId: newestBuild,
    })
    .from(functions)
    .innerJoin(accounts, eq(accounts.id, functions.accountId))
    .leftJoin(releases, eq(releases.functionId, functions.id))
    .where(eq(functions.id, functionId));
  if (!row) return null;
  return {
    fn: row.fn,
    plan: row.plan,
    release: row.released === null ? null : { buildId: row.buildId, canaryBuildId: row.canaryBuildId, canaryWeight: row.canaryWeight },
    newestBuildId: row.newestBuildId,
  };
}
