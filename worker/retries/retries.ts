import type { Bindings } from "../env.js";
import type { ShardArchiveFinder } from "../task-life/archived-reads.js";
import type { Db } from "../db/client.js";
import type { DispatcherRpc } from "../dispatch/rpc.js";
import type { NewWork, WorkQueue, WorkRow } from "../dispatch/queue.js";
import type { TaskDone } from "../dispatch/outcomes.js";
import { taskLogKey } from "../lib/storage-keys.js";
import { attemptsRecorded } from "./attempt-records.js";
import { TIMED_OUT_LINE, uploadedLines } from "./attempt-log.js";
import { backoffMs } from "./backoff.js";
import { DeadLetters } from "./dead-letters.js";
import { RetryPolicies } from "./policies.js";
import { RetryRuns, type Run } from "./runs.js";
import { storageWritten } from "../storage/records.js";
import type { Outcome } from "../dispatch/outcomes.js";
import { ShardMeters, type FailedAttemptMeter, type HeldRowOf } from "../shard-metering/shard-meters.js";

/** After a failed D1 or R2 write, retries' own work is tried again this much later (by the alarm). */
const SETTLE_AGAIN_MS = 1_000;

export interface RetryHost {
  queue: WorkQueue;
  /** Puts work whose backoff is over back in the queue (the dispatcher's enqueue). */
  requeue: (work: NewWork[]) => Promise<void>;
  log: (msg: string, extra: Record<string, unknown>) => void;
  /** The shard's own archive (a dead letter's failed task may be only there). */
  archive: ShardArchiveFinder;
  /** The task as the shard created it, while it holds it: what a failed attempt is metered at (shard-metering/). */
  created: HeldRowOf;
}

/** What a final outcome carries of a retried task's attempts (see dispatch/records.ts). */
export interface AttemptsOfOutcome {
  attempts: number;
  earlier: string[];
}

/** A failed attempt, for retries and dead letters: a 5xx, or no report at all (it ran past its timeout). */
export const failedOutcome = (report: TaskDone | null) => !report || report.status >= 500;

/** A failed attempt's storage change in the shape the outcome commit writes it (storage/records.ts). */
const storageOutcome = (r: Run): Outcome => ({
  taskId: r.taskId, accountId: r.accountId, functionId: r.functionId, at: r.failedAt ?? 0, node: null, assignedAt: null, rttMs: 0,
  report: { storage: r.storage } as TaskDone,
});

/** A run's last failed attempt, as recorded and metered (the run's failure time is kept from its park). */
const failedAttempt = (r: Run, now: number): FailedAttemptMeter & { attempt: number } => ({
  taskId: r.taskId, accountId: r.accountId, attempt: r.attempt - 1, at: r.failedAt ?? now, durationMs: r.durationMs ?? 0,
});

const newWorkOf = (w: WorkRow, payload: string): NewWork => ({
  id: w.id, kind: w.kind, accountId: w.account_id, functionId: w.function_id, lang: w.lang, privileged: w.privileged === 1,
  cpu: w.cpu, mem: w.mem, timeoutS: w.timeout_s, payload: JSON.parse(payload) as unknown,
});

/**
 * Retries and dead letters on one dispatcher shard. A task of a function whose policy retries or
 * dead-letters gets a run when queued asynchronously (a synchronous call, or a dead letter, never
 * does: Dispatcher.enqueue says `once`); the policy in force then is the one it keeps. A failed
 * attempt with attempts left leaves the queue and waits for its backoff in the shard's storage; the
 * alarm puts it back. The shard's own alarm holds the wait, rather than a Cloudflare Queue's delayed
 * redelivery, so the task keeps one owner from issue to outcome: the queue row, its run and its
 * outcome live in one object's storage and change in one synchronous step (docs/dispatch.md).
 */
export class Retries {
  readonly policies: RetryPolicies;
  readonly runs: RetryRuns;
  readonly letters: DeadLetters;
  /** Failed attempts' invocations, metered by the shard in sums of their own (shard-metering/shard-meters.ts). */
  private readonly meters: ShardMeters;
  private settling: Promise<void> | undefined;
  private unsettled = false;
  private settleAgain = false;

  constructor(
    private readonly env: Bindings,
    private readonly db: Db,
    sql: SqlStorage,
    self: { id: DurableObjectId; self: DispatcherRpc },
    private readonly host: RetryHost,
  ) {
    this.policies = new RetryPolicies(sql);
    this.runs = new RetryRuns(sql);
    this.letters = new DeadLetters(env, db, sql, self, host.log, host.archive);
    this.meters = new ShardMeters(sql, `${self.id.toString()}#attempts`, "shard_meter_attempts");
  }

  reload(): void {
    this.policies.reload();
    this.runs.reload();
    this.letters.reload();
    this.meters.reload();
  }

  /** Queued tasks that may be retried or dead-lettered get their run (one map lookup for a function without a policy). */
  track(work: NewWork[], once: boolean): void {
    if (once) return;
    for (const w of work) {
      const p = w.kind === "task" ? this.policies.get(w.functionId) : undefined;
      if (p) this.runs.track(w, p);
    }
  }

  /** Whether the task waits here for its next attempt (not in the queue). */
  waiting(taskId: string): boolean {
    return this.runs.get(taskId)?.work != null;
  }

  /**
   * A failed attempt (a 5xx report, or null: it ran past its timeout) of a task with attempts left
   * leaves the queue, in the caller's synchronous step, and waits for its backoff. True when it did;
   * false when the outcome is final and must be accepted.
   */
  retry(w: WorkRow, report: TaskDone | null, now: number): boolean {
    const run = this.runs.get(w.id);
    if (!run || run.attempt >= run.policy.maxAttempts || !failedOutcome(report)) return false;
    const payload = this.host.queue.take(w.id);
    if (payload === undefined) return false;
    const lines = !report ? [TIMED_OUT_LINE] : report.logUploaded ? { uploaded: taskLogKey(w.account_id, w.id) } : report.log;
    const durationMs = report ? report.durationMs : now - (w.assigned_at ?? now);
    this.runs.park(run, newWorkOf(w, payload), lines, { at: now, durationMs, storage: report?.storage }, now + backoffMs(run.policy.backoffSeconds, run.attempt + 1));
    this.host.log("task attempt failed; retrying", { taskId: w.id, attempt: run.attempt, status: report?.status ?? 504 });
    void this.settle();
    return true;
  }

  /** The task's outcome is final: its run ends, a failure plans its dead letter, and the outcome gets the attempts. */
  ended(w: WorkRow, report: TaskDone | null): AttemptsOfOutcome | undefined {
    const run = this.runs.end(w.id);
    if (!run) return undefined;
    if (run.policy.deadLetterFunctionId && failedOutcome(report)) this.letters.plan(w.id, w.account_id, run.policy.deadLetterFunctionId);
    return { attempts: run.attempt, earlier: run.earlier };
  }

  /** The function was deleted: its waiting tasks are forgotten (D1 records them cancelled). */
  dropFunction(functionId: string): string[] {
    return this.runs.dropFunction(functionId);
  }

  /** The alarm: D1 and R2 work left over, then the tasks whose backoff is over go back to the queue. */
  async tick(now: number, logged: (taskId: string) => boolean): Promise<void> {
    await this.settle();
    const back = this.runs.release(now);
    if (back.length) await this.host.requeue(back);
    if (this.letters.size) await this.letters.drain(logged);
  }

  /** When the alarm is next needed for retries (null: not). */
  nextAt(now: number): number | null {
    const due = this.runs.earliestDue();
    const again = this.unsettled || this.letters.size ? now + SETTLE_AGAIN_MS : null;
    return due === null ? again : again === null ? due : Math.min(due, again);
  }

  /**
   * Records failed attempts in D1 and copies uploaded logs, until none is left; a call while a pass
   * is in flight makes it pass once more. A failure leaves the rest to the alarm.
   */
  settle(): Promise<void> {
    if (this.settling) {
      this.settleAgain = true;
      return this.settling;
    }
    this.settling = (async () => {
      do {
        this.settleAgain = false;
        await this.settleOnce();
      } while (this.settleAgain && !this.unsettled);
    })().finally(() => (this.settling = undefined));
    return this.settling;
  }

  private async settleOnce(): Promise<void> {
    try {
      const now = Date.now();
      const runs = this.runs.unsettled();
      const unrecorded = runs.filter((r) => !r.recorded);
      const failed = unrecorded.map((r) => failedAttempt(r, now));
      const meters = this.meters.forAttempts(failed, this.host.created, () => this.runs.unsettled().filter((r) => !r.recorded).map((r) => failedAttempt(r, now)), now);
      await attemptsRecorded(this.db, failed.map((f) => ({ ...f, meteredHere: meters.here.has(f.taskId) })), meters.statements);
      await storageWritten(this.db, this.env.BUCKET, unrecorded.flatMap((r) => (r.storage ? [storageOutcome(r)] : [])));
      // In one storage step: an attempt is in the shard's sums exactly when its run is recorded.
      meters.committed();
      for (const r of unrecorded) this.runs.recorded(r.taskId);
      for (const r of runs) if (r.logKey) this.runs.logCopied(r.taskId, await uploadedLines(this.env.BUCKET, r.logKey));
      this.unsettled = false;
    } catch (e) {
      this.unsettled = true;
      this.host.log("recording a failed attempt failed; retrying", { error: String(e) });
    }
  }
}
