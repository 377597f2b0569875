/**
 * D1 trouble on purpose, for operators and tests (docs/dispatch.md, "Testing D1 trouble"):
 *
 * - `D1_DELAY_MS` (a Worker var; `GCFAAS_D1_DELAY_MS` of the start command) adds that many
 *   milliseconds before every D1 round trip (a statement's first/all/run/raw, a batch, an exec),
 *   as a primary far from the Worker would;
 * - `D1_TEST_FAILURES = "1"` (set only by the local stack's tests, never in wrangler.toml) lets
 *   `POST /__test/d1` (worker/diagnostics/d1-control.ts) open a failure window, during which every
 *   D1 round trip throws the error D1 throws when its connection drops.
 *
 * With neither set, troubled() returns the binding itself: a deployment pays nothing for this.
 *
 * The window lives in this module, that is in the isolate. Locally the Worker and all its Durable
 * Objects run in one isolate (the cost counters rely on the same), so one control request reaches
 * every caller; a deployment has many isolates, and no control at all.
 */

export type FailureMode = "refuse" | "lose_answer";

/**
 * `refuse`: the round trip never reaches D1 (a primary that is down). `lose_answer`: it reaches D1
 * and commits, and the answer is lost on the way back, so the caller sees an error for a write that
 * landed — the case that tests whether a retry counts anything twice.
 */
interface Window {
  until: number;
  mode: FailureMode;
  /** Round trips still let through before the failures begin: D1 lost in the middle of a request. */
  after: number;
  /** Round trips failed in this window, for the control's answer. */
  failed: number;
}

let window: Window | undefined;
/** Round trips delayed since the isolate started: the proof, without a clock, that a delay is in effect. */
let delayed = 0;

/** The message D1 gives when its connection drops (a retryable error, per D1's documentation). */
export const INJECTED_FAILURE = "D1_ERROR: Network connection lost. (a test's D1 failure window)";

export function openFailureWindow(ms: number, mode: FailureMode, after = 0, now = Date.now()): void {
  window = { until: now + ms, mode, after, failed: 0 };
}

/** Ends the window now; its count of failed round trips stays readable. */
export function closeFailureWindow(now = Date.now()): void {
  if (window) window.until = Math.min(window.until, now);
}

export function troubleState(now = Date.now()) {
  return { failing: !!window && now < window.until, until: window?.until ?? null, mode: window?.mode ?? null, failed: window?.failed ?? 0, delayed };
}

export interface TroubleVars {
  D1_DELAY_MS?: string;
  D1_TEST_FAILURES?: string;
}

/** A non-negative integer of milliseconds, or the reason it is not one. */
export function delayMsOf(v: string | undefined): number {
  if (v === undefined || v === "") return 0;
  const n = Number(v);
  if (!/^\d+$/.test(v) || !Number.isSafeInteger(n)) throw new Error(`D1_DELAY_MS must be a whole number of milliseconds (0 or more), not ${JSON.stringify(v)}`);
  return n;
}

/** The binding as the service should use it: itself unless a delay or the test failures are on. */
export function troubled(d1: D1Database, vars: TroubleVars): D1Database {
  const delayMs = delayMsOf(vars.D1_DELAY_MS);
  const failures = vars.D1_TEST_FAILURES === "1";
  if (!delayMs && !failures) return d1;
  return new TroubledD1(d1, delayMs, failures);
}

/** Before a round trip: the delay, then a refusal if a window is open; returns whether to lose the answer. */
async function before(delayMs: number, failures: boolean): Promise<boolean> {
  if (delayMs) {
    delayed++;
    await new Promise((r) => setTimeout(r, delayMs));
  }
  if (!failures || !window || Date.now() >= window.until) return false;
  if (window.after > 0) {
    window.after--;
    return false;
  }
  window.failed++;
  if (window.mode === "refuse") throw new Error(INJECTED_FAILURE);
  return true;
}

async function roundTrip<T>(delayMs: number, failures: boolean, call: () => Promise<T>): Promise<T> {
  const loseAnswer = await before(delayMs, failures);
  const out = await call();
  if (loseAnswer) throw new Error(INJECTED_FAILURE);
  return out;
}

const inner = new WeakMap<D1PreparedStatement, D1PreparedStatement>();

class TroubledStatement implements D1PreparedStatement {
  constructor(
    private readonly stmt: D1PreparedStatement,
    private readonly delayMs: number,
    private readonly failures: boolean,
  ) {
    inner.set(this, stmt);
  }

  bind(...values: unknown[]): D1PreparedStatement {
    return new TroubledStatement(this.stmt.bind(...values), this.delayMs, this.failures);
  }

  first<T = unknown>(colName?: string): Promise<T | null> {
    return roundTrip(this.delayMs, this.failures, () => (colName === undefined ? this.stmt.first<T>() : this.stmt.first<T>(colName)));
  }

  run<T = Record<string, unknown>>(): Promise<D1Result<T>> {
    return roundTrip(this.delayMs, this.failures, () => this.stmt.run<T>());
  }

  all<T = Record<string, unknown>>(): Promise<D1Result<T>> {
    return roundTrip(this.delayMs, this.failures, () => this.stmt.all<T>());
  }

  raw<T = unknown[]>(options: { columnNames: true }): Promise<[string[], ...T[]]>;
  raw<T = unknown[]>(options?: { columnNames?: false }): Promise<T[]>;
  raw<T = unknown[]>(options?: { columnNames?: boolean }): Promise<T[] | [string[], ...T[]]> {
    return roundTrip<T[] | [string[], ...T[]]>(this.delayMs, this.failures, () => (options?.columnNames ? this.stmt.raw<T>({ columnNames: true }) : this.stmt.raw<T>()));
  }
}

class TroubledD1 implements D1Database {
  constructor(
    private readonly d1: D1Database,
    private readonly delayMs: number,
    private readonly failures: boolean,
  ) {}

  prepare(query: string): D1PreparedStatement {
    return new TroubledStatement(this.d1.prepare(query), this.delayMs, this.failures);
  }

  batch<T = unknown>(statements: D1PreparedStatement[]): Promise<D1Result<T>[]> {
    const own = statements.map((s) => inner.get(s) ?? s);
    return roundTrip(this.delayMs, this.failures, () => this.d1.batch<T>(own));
  }

  exec(query: string): Promise<D1ExecResult> {
    return roundTrip(this.delayMs, this.failures, () => this.d1.exec(query));
  }

  withSession(constraintOrBookmark?: string): D1DatabaseSession {
    // Sessions (read replication) are not used by the service; the binding's own is returned.
    return this.d1.withSession(constraintOrBookmark);
  }

  dump(): Promise<ArrayBuffer> {
    return this.d1.dump();
  }
}
