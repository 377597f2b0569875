import type { Db } from "../db/client.js";
import { storageWritten } from "../storage/records.js";
import type { ChainFiring } from "./chain-firing.js";
import type { OutcomeLog } from "./outcomes.js";
import type { RecentlyFinished } from "./recently-finished.js";
import { outcomesWritten } from "./records.js";
import type { Waiters } from "./waiters.js";
import type { HeldTasks } from "../task-life/held-tasks.js";
import { MAX_STATEMENT_JSON_BYTES, rowsInserted } from "../task-life/record-rows.js";
import { finishedRow, type OutcomeElement } from "../task-life/finished-row.js";
import type { ShardAdmission } from "../shard-admission/leases.js";
import type { FinishedRecords } from "../shard-history/finished-records.js";
import type { ShardMeters } from "../shard-metering/shard-meters.js";

/** What a commit hands its results to, once D1 has them. */
export interface CommitParts {
  db: Db;
  bucket: R2Bucket;
  outcomes: OutcomeLog;
  finished: RecentlyFinished;
  /** The shard's own copy of its finished records (worker/shard-history/), kept as D1 gets them. */
  history: FinishedRecords;
  waiters: Waiters;
  chains: ChainFiring;
  /** Tasks created in the shard: their rows go to D1 in the same batches, ahead of their outcomes. */
  held: HeldTasks;
  /** Outcomes already made (or being made) elements, to answer their callers early: none is made twice. */
  elements: Map<string, Promise<OutcomeElement>>;
  /**
   * A write starts at least this long after the previous one ended: what arrives meanwhile rides
   * along, so D1 sees a few large batches rather than one per task. Nobody waits on it: callers are
   * answered from the shard, and only records, triggers and dead letters follow the batch.
   */
  gapMs: number;
  /** The shard's leases (worker/shard-admission/): ended tasks settle in the batch that records them. */
  admission: Pick<ShardAdmission, "settle" | "refresh">;
  /** The shard's metering (worker/shard-metering/): the batch sends its accounts' sums, absolute. */
  meters: ShardMeters;
  /** A write failed: the outcomes stay logged, and the caller arranges a retry. */
  onError: (e: unknown) => Promise<void>;
}

/**
 * Group commit of a dispatcher's new task rows and outcome log to D1, in as many batches as it takes. A call made
 * while a write is in flight returns that write's promise, which then writes once more, so
 * outcomes that arrive during a write ride in the next batch rather than a write of their own.
 * After each batch: the log forgets it, the rows it finished are kept for readers, waiting
 * readers are woken, and the finished tasks' triggers are handed to the firing.
 */
export class GroupCommit {
  private writing: Promise<void> | undefined;
  private again = false;
  private lastEnd = 0;

  constructor(private readonly parts: CommitParts) {}

  /** Batches are being read and written (not while a commit waits out its gap). */
  private batching = false;

  /** True while a write is in flight (the log's memory must not be reloaded under it). */
  get inFlight(): boolean {
    return this.batching;
  }

  private timer: ReturnType<typeof setTimeout> | undefined;

  /**
   * A commit a gap from now, unless one is due sooner: for what need not go at once (a new task's
   * row, which most often rides with its own outcome a few milliseconds later).
   */
  later(): void {
    if (this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.run();
    }, this.parts.gapMs);
  }

  run(): Promise<void> {
    if (this.writing) {
      this.again = true;
      return this.writing;
    }
    this.writing = (async () => {
      try {
        // Measured on the monotonic clock, and never more than the gap: a wall clock that jumps must not stall records.
        const wait = Math.min(this.parts.gapMs, this.lastEnd + this.parts.gapMs - performance.now());
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        this.batching = true;
        do {
          this.again = false;
          while (await this.batch());
        } while (this.again);
        // Leases running low refill now that D1 answers (and what an idle account holds goes back).
        void this.parts.admission.refresh(Date.now()).catch(() => undefined);
      } catch (e) {
        await this.parts.onError(e);
      } finally {
        this.batching = false;
        this.lastEnd = performance.now();
        this.writing = undefined;
      }
    })();
    return this.writing;
  }

  /** Tests hold every write back, to read while D1 lags behind the shard (holdRecords in test/worker/helpers.ts). */
  held = false;

  /** Writes one batch of outcomes; false when there was none. */
  private async batch(): Promise<boolean> {
    if (this.held) return false;
    const { db, bucket, outcomes, finished, history, waiters, chains, held, elements } = this.parts;
    const batch = outcomes.next();
    const ids = batch.map((o) => o.taskId);
    const rows = held.unrecorded(ids, MAX_STATEMENT_JSON_BYTES);
    if (!batch.length && !rows.length) return false;
    const now = Date.now();
    const settle = this.parts.admission.settle([...ids, ...rows.filter((r) => r.finishedAt != null).map((r) => r.id)]);
    const meters = this.parts.meters.forBatch(batch, (id) => held.created(id), () => outcomes.all(), now);
    // Rowless tasks (held-tasks.ts): no row goes to D1, and the shard alone says whether an outcome finished one.
    const rowless = new Set([...ids, ...rows.map((r) => r.id)].filter((id) => held.rowless(id)));
    const written = await outcomesWritten(db, bucket, batch, now, {
      rows: rowsInserted(rows.filter((r) => !rowless.has(r.id))), elements, after: [...(settle?.statements ?? []), ...meters.statements], meteredHere: meters.here,
      finishedOf: (e) => {
        const created = held.created(e.id);
        // A rowless task cancelled here (its function's deletion) before its outcome came stays cancelled.
        if (!created || (rowless.has(e.id) && created.finishedAt != null)) return undefined;
        return finishedRow(created, e);
      },
      rowless,
    });
    settle?.committed();
    await storageWritten(db, bucket, batch);
    // With the outcomes' removal, in one storage step: an outcome is in the log or in the sums, never both.
    meters.committed();
    outcomes.remove(ids);
    held.committed(rows, ids);
    // In the storage step that drops the outcomes: the shard keeps a record exactly when the outcome
    // finished its task (D1 said so of a row; of a rowless task the shard decided), built from the
    // task it holds and the outcome. A task with a row that the shard finished itself (cancelled by
    // its function's deletion) is not kept: D1 may have finished it first, at another time, and
    // keeps its own. A rowless one is: the shard's record is its only one.
    history.keep([...written.finished.values(), ...rows.filter((r) => rowless.has(r.id) && r.finishedAt != null)], now, rowless);
    for (const id of ids) elements.delete(id);
    for (const row of written.finished.values()) finished.add(row, now);
    for (const o of batch) waiters.wake(o.taskId, written.finished.get(o.taskId) ?? null);
    chains.add([...written.finished.values()], written.triggers);
    return true;
  }
}
