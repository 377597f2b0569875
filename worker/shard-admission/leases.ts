import type { SQL } from "drizzle-orm";
import type { Db } from "../db/client.js";
import type { FunctionRow } from "../db/rows.js";
import { ApiError, notFound } from "../errors.js";
import { periodOf, planOf } from "../billing/plans.js";
import { noSuccessfulBuild, quotaExhausted, tooManyPending, type AdmissionLimits } from "../tasks/admission.js";
import { storageUnavailable } from "../db/unavailable.js";
import { buildFor, FunctionBook } from "./function-book.js";
import { LeaseBook, type Lease, type Slots } from "./lease-book.js";
import { askLeases, leaseFloors, type LeaseAnswer, type LeaseAsk } from "./lease-statements.js";
import { RecentRate } from "./recent-rate.js";

/** A lease chunk: twice the account's admissions here in the last minute, within these bounds. */
export const MIN_CHUNK = 16;
export const MAX_CHUNK = 4096;
/** Rounds of asking one admission may wait through before it is refused with 409 (D1 granting nothing while it says there is room). */
const MAX_ASKS = 10;
/** After D1 failed, admissions do not wait on it again for this long: they borrow instead. */
const D1_RETRY_MS = 1_000;
/** D1 said the plan or the cap has no room: refusals answer from that for this long before asking again. */
const RECHECK_MS = 1_000;
/** Accounts asked for in one D1 batch (four statements each). */
const ASKS_PER_BATCH = 10;

export type Refused = { refused: { code: string; message: string; headers?: Record<string, string> } };
export type Admitted = { fn: FunctionRow; buildId: string; period: string };

const refusal = (e: ApiError): Refused => ({ refused: { code: e.code, message: e.message, ...(e.headers ? { headers: e.headers } : {}) } });

/** What the shard knows of an account beyond storage: rebuilt after an eviction from nothing, harmlessly. */
interface AccountState {
  rate: RecentRate;
  /** The last chunk D1 was asked for: the refill mark, and what may be borrowed while D1 fails. */
  chunk: number;
  /** D1's last answer, and when (by the caller's clock), for the period it was about. */
  answer?: LeaseAnswer & { at: number; period: string };
  /** The ask in flight: one at a time per account, so answers cannot arrive out of order. */
  asking?: Promise<void>;
  /** Admissions waiting for room now: a burst asks for all of them at once, not a chunk at a time. */
  wanting: number;
}

/**
 * Admission in the dispatcher shard (docs/dispatch.md, "Admission in the shard"): the function's
 * facts from the FunctionBook, the plan's invocations and the pending cap from leases this shard
 * holds in D1 (lease-statements.ts). Admitting is synchronous from what the shard holds; D1 is
 * asked on a cold miss, when a lease has run out, and in the background once half of a chunk is
 * used. While D1 fails the shard lends each account one more chunk of its own, which D1 counts as
 * granted (whatever the limit) at the next write that reaches it.
 */
export class ShardAdmission {
  readonly functions: FunctionBook;
  private readonly book: LeaseBook;
  private readonly accounts = new Map<string, AccountState>();
  private readonly limitsOf: () => AdmissionLimits;
  /** When D1 last failed an ask (by the callers' clock); borrowing is allowed for D1_RETRY_MS after. */
  private d1FailedAt = -Infinity;
  private refreshing: Promise<void> | undefined;
  private refreshAgain = false;

  constructor(
    sql: SqlStorage,
    private readonly db: Db,
    private readonly shard: string,
    limits: AdmissionLimits | (() => AdmissionLimits),
  ) {
    this.functions = new FunctionBook(db);
    this.book = new LeaseBook(sql);
    // A getter lets the Durable Object build this before PLANS is read (a malformed PLANS fails admissions, not the shard).
    this.limitsOf = typeof limits === "function" ? limits : () => limits;
  }

  /** One new task of the function for the account: the build it runs and the period whose lease it took, or today's refusal. */
  async admit(accountId: string, functionId: string, now: number): Promise<Admitted | Refused> {
    const facts = await this.functions.get(functionId, now);
    if (!facts || facts.fn.accountId !== accountId) return refusal(notFound("function"));
    const buildId = buildFor(facts);
    if (!buildId) return refusal(noSuccessfulBuild());
    const limits = this.limitsOf();
    const period = periodOf(now);
    const st = this.state(accountId);
    for (let asks = 0; ; asks++) {
      const lease = this.book.lease(accountId, period) ?? { accountId, period, granted: 0, returned: 0, taken: 0, settled: 0 };
      const slots = this.book.slotsOf(accountId) ?? { accountId, held: 0, unfinished: 0 };
      const room = lease.granted - lease.returned - lease.taken;
      const free = slots.held - slots.unfinished;
      if (room > 0 && free > 0) return this.take(st, lease, slots, facts.fn, buildId, now);
      // D1 said lately that the plan (or the cap) has no room: refused from that, without asking again.
      const a = st.answer?.period === period && now - st.answer.at < RECHECK_MS ? st.answer : undefined;
      if (room <= 0 && a && a.limit - a.used - a.outstanding <= 0)
        return refusal(quotaExhausted(planOf(limits.plans, facts.plan), a.used, Math.max(a.outstanding, a.limit - a.used), now));
      if (free <= 0 && a && a.slotsHeld >= limits.maxPending) return refusal(tooManyPending(limits.maxPending));
      if (now - this.d1FailedAt < D1_RETRY_MS) {
        // D1 unreachable: one chunk beyond the lease, counted in D1 once it answers again.
        if (room > -st.chunk && free > -st.chunk) return this.take(st, lease, slots, facts.fn, buildId, now);
        return refusal(storageUnavailable());
      }
      // Other admissions took what D1 granted while this one waited: ask again. Each ask covers every
      // admission waiting then, so a burst needs few; the bound only stops a D1 that grants nothing
      // yet says there is room.
      if (asks === MAX_ASKS) return refusal(new ApiError("conflict", "the account's other tasks took the lease while this one was being admitted; try again"));
      st.wanting++;
      try {
        await this.ask([accountId], now, true).catch(() => undefined);
      } finally {
        st.wanting--;
      }
    }
  }

  /**
   * A task admitted here ended (finished, failed, cancelled, expired): its slot frees now; its
   * reservation settles with the next flush, or (`metered` false) comes back to the lease now.
   */
  ended(accountId: string, issuedPeriod: string, taskId: string = crypto.randomUUID(), metered = true): void {
    const slots = this.book.slotsOf(accountId);
    if (slots) this.book.saveSlots({ ...slots, unfinished: Math.max(0, slots.unfinished - 1) });
    // A task that used no invocation (cancelled, or ended before any node ran it) gives its
    // reservation back to this shard's lease at once: it is not settled, so D1 still counts it as
    // the shard's, as unused room, which it now is.
    const lease = metered ? undefined : this.book.lease(accountId, issuedPeriod);
    if (lease && lease.taken > lease.settled) this.book.saveLease({ ...lease, taken: lease.taken - 1 });
    else this.book.addEnded({ taskId, accountId, period: issuedPeriod });
  }

  /**
   * Statements for the flush batch that records ended tasks' outcomes (the same D1 batch, so a
   * metered task leaves the reservations as it enters usage_totals), and a callback once it
   * committed. `taskIds`: settle only these ended tasks (those whose outcomes are in the batch);
   * all ended tasks without it. The counts are absolute: a batch retried, or run twice, settles once.
   */
  settle(taskIds?: Iterable<string>): { statements: SQL[]; committed(): void } | null {
    const only = taskIds ? new Set(taskIds) : null;
    const picked = [...this.book.ended.values()].filter((e) => !only || only.has(e.taskId));
    if (!picked.length) return null;
    const counts = new Map<Lease, number>();
    for (const e of picked) {
      const l = this.book.lease(e.accountId, e.period);
      if (l) counts.set(l, (counts.get(l) ?? 0) + 1);
    }
    // Never more settled than taken (a task this shard did not admit): the lease's outstanding count stays whole.
    const writes = [...counts].map(([l, n]) => ({ l, settled: Math.min(l.taken, l.settled + n) }));
    return {
      statements: writes.map(({ l, settled }) => leaseFloors(l.accountId, l.period, this.shard, l.taken + l.returned, settled, l.returned)),
      committed: () => {
        for (const { l, settled } of writes) {
          const now = this.book.lease(l.accountId, l.period);
          if (now) this.book.saveLease({ ...now, settled: Math.max(now.settled, settled) });
        }
        this.book.removeEnded(picked.map((e) => e.taskId));
      },
    };
  }

  /** Background: refill leases running low, give back what is not needed, register borrowed tasks. After a flush or from the alarm. */
  refresh(now: number): Promise<void> {
    if (this.refreshing) {
      this.refreshAgain = true;
      return this.refreshing;
    }
    const run = async () => {
      do {
        this.refreshAgain = false;
        await this.refreshOnce(now);
      } while (this.refreshAgain);
    };
    this.refreshing = run().finally(() => (this.refreshing = undefined));
    return this.refreshing;
  }

  /** Resolves once no refresh or ask is in flight (tests, and a caller that wants D1 up to date). */
  async whenIdle(): Promise<void> {
    while (this.refreshing || [...this.accounts.values()].some((s) => s.asking)) {
      await this.refreshing;
      await Promise.all([...this.accounts.values()].map((s) => s.asking));
    }
  }

  /** The function, its release or builds changed; or the account's plan (or a grant, or the account itself). */
  changed(change: { functionId?: string; accountId?: string }): void {
    if (change.functionId) this.functions.changed(change.functionId);
    if (change.accountId) {
      this.functions.changedAccount(change.accountId);
      const st = this.accounts.get(change.accountId);
      if (st) st.answer = undefined; // a raised plan is asked for at once
    }
  }

  /** A build of the function ended, or old builds' artifacts were evicted: what it runs may have changed. */
  buildEnded(functionId: string): void {
    this.functions.changed(functionId);
  }

  /** Reads storage again, as a fresh instance does (see Dispatcher.resync). */
  reload(): void {
    this.book.reload();
  }

  private take(st: AccountState, lease: Lease, slots: Slots, fn: FunctionRow, buildId: string, now: number): Admitted {
    const l = { ...lease, taken: lease.taken + 1 };
    const s = { ...slots, unfinished: slots.unfinished + 1 };
    this.book.saveLease(l);
    this.book.saveSlots(s);
    st.rate.add(now);
    const half = this.chunkOf(st, now) / 2;
    if (l.granted - l.returned - l.taken < half || s.held - s.unfinished < half) void this.refresh(now);
    return { fn, buildId, period: l.period };
  }

  private state(accountId: string): AccountState {
    let st = this.accounts.get(accountId);
    if (!st) this.accounts.set(accountId, (st = { rate: new RecentRate(), chunk: MIN_CHUNK, wanting: 0 }));
    return st;
  }

  /** What the shard should hold of the account: a chunk sized on its rate; nothing once it is idle (no task for a minute, none unfinished). */
  private keepFor(st: AccountState, slots: Slots | undefined, now: number, admitting: boolean): number {
    const idle = !admitting && st.rate.lastMinute(now) === 0 && (slots?.unfinished ?? 0) === 0;
    return idle ? 0 : this.chunkOf(st, now);
  }

  private chunkOf(st: AccountState, now: number): number {
    return Math.min(MAX_CHUNK, Math.max(MIN_CHUNK, Math.ceil(2 * st.rate.lastMinute(now))));
  }

  private async refreshOnce(now: number): Promise<void> {
    // D1 failed a moment ago: admissions borrow meanwhile, and the next refresh asks again.
    if (now - this.d1FailedAt < D1_RETRY_MS) return;
    const period = periodOf(now);
    const limits = this.limitsOf();
    const due: string[] = [];
    for (const slots of [...this.book.allSlots()]) {
      const st = this.state(slots.accountId);
      if (st.asking) continue;
      const lease = this.book.lease(slots.accountId, period);
      const keep = this.keepFor(st, slots, now, false);
      const room = lease ? lease.granted - lease.returned - lease.taken : 0;
      const free = slots.held - slots.unfinished;
      // Invocations beyond twice what it keeps go back (written here first, so none is admitted from them).
      const giveBack = lease !== undefined && room > 2 * keep;
      if (giveBack) this.book.saveLease({ ...lease, returned: lease.returned + room - keep });
      // D1 said lately that the plan, or the cap, has less than half a chunk left: asking again
      // within RECHECK_MS would only get the same answer, once per batch.
      const recent = st.answer?.period === period && now - st.answer.at < RECHECK_MS ? st.answer : undefined;
      const planShort = recent !== undefined && recent.limit - recent.used - recent.outstanding < keep / 2;
      const capShort = recent !== undefined && limits.maxPending - recent.slotsHeld < keep / 2;
      const refill = keep > 0 && lease !== undefined && room < keep / 2 && !planShort;
      const slotsLow = keep > 0 && free < keep / 2 && !capShort;
      if (giveBack || refill || room < 0 || slotsLow || free > 2 * keep) due.push(slots.accountId);
    }
    // Past periods whose every task is settled are done with.
    for (const l of [...this.book.allLeases()]) if (l.period < period && l.taken <= l.settled) this.book.dropLease(l);
    for (let i = 0; i < due.length; i += ASKS_PER_BATCH) await this.ask(due.slice(i, i + ASKS_PER_BATCH), now).catch(() => undefined);
  }

  /**
   * Asks D1 for the accounts' leases in one batch: more invocations (a chunk) where the lease is
   * below half a chunk, slots up to the unfinished tasks plus a chunk. An account with an ask in
   * flight waits for it instead. Throws when D1 failed (borrowing is allowed for a while then).
   */
  private async ask(accountIds: string[], now: number, admitting = false): Promise<void> {
    const waiting = accountIds.map((id) => this.state(id).asking).filter((p) => p !== undefined);
    const fresh = accountIds.filter((id) => !this.state(id).asking);
    const period = periodOf(now);
    const limits = this.limitsOf();
    const asks: LeaseAsk[] = fresh.map((accountId) => {
      const st = this.state(accountId);
      const lease = this.book.lease(accountId, period) ?? { accountId, period, granted: 0, returned: 0, taken: 0, settled: 0 };
      const slots = this.book.slotsOf(accountId) ?? { accountId, held: 0, unfinished: 0 };
      // The chunk its rate calls for, or what a burst waiting now needs with half a chunk to spare.
      const chunk = this.keepFor(st, slots, now, admitting);
      const keep = chunk && Math.min(MAX_CHUNK, Math.max(chunk, st.wanting + Math.ceil(chunk / 2)));
      const room = lease.granted - lease.returned - lease.taken;
      // Slots move only outside a band around what the unfinished tasks need: a backlog that rises
      // and falls by a few tasks with every batch must not send an ask each time.
      const inBand = slots.held >= slots.unfinished + Math.ceil(keep / 2) && slots.held <= slots.unfinished + 2 * keep;
      const wantSlots = Math.min(limits.maxPending, inBand ? slots.held : slots.unfinished + keep);
      // Slots given back are given up here first: no admission may use them while D1 hears of it.
      if (wantSlots < slots.held) this.book.saveSlots({ ...slots, held: wantSlots });
      return {
        accountId, period, shard: this.shard, floor: lease.taken + lease.returned, returned: lease.returned, unfinished: slots.unfinished,
        ask: keep > 0 && room < keep / 2 ? keep : 0, wantSlots,
      };
    });
    const asking = asks.length ? this.askNow(asks, now) : undefined;
    if (asking) {
      for (const id of fresh) this.state(id).asking = asking;
      const done = () => {
        for (const id of fresh) if (this.state(id).asking === asking) this.state(id).asking = undefined;
      };
      asking.then(done, done);
    }
    await Promise.all([asking, ...waiting]);
  }

  private async askNow(asks: LeaseAsk[], now: number): Promise<void> {
    const limits = this.limitsOf();
    try {
      const answers = await askLeases(this.db, asks, limits.plans, limits.maxPending);
      asks.forEach((a, i) => this.apply(a, answers[i]!, now));
    } catch (e) {
      this.d1FailedAt = Math.max(this.d1FailedAt, now);
      console.error(JSON.stringify({ level: "error", component: "shard-admission", msg: "asking D1 for leases failed; borrowing meanwhile", error: String(e) }));
      throw e;
    }
  }

  /** D1's answer becomes the shard's lease (granted only grows; the answers of one account arrive in order). */
  private apply(a: LeaseAsk, answer: LeaseAnswer, now: number): void {
    const st = this.state(a.accountId);
    const lease = this.book.lease(a.accountId, a.period) ?? { accountId: a.accountId, period: a.period, granted: 0, returned: 0, taken: 0, settled: 0 };
    const slots = this.book.slotsOf(a.accountId) ?? { accountId: a.accountId, held: 0, unfinished: 0 };
    this.book.saveLease({ ...lease, granted: Math.max(lease.granted, answer.granted) });
    // An idle account that gave everything back leaves the book (its lease of the period stays, for settling).
    if (answer.held === 0 && slots.unfinished === 0) this.book.dropSlots(a.accountId);
    else this.book.saveSlots({ ...slots, held: answer.held });
    if (a.ask) st.chunk = a.ask;
    st.answer = { ...answer, at: now, period: a.period };
  }
}
