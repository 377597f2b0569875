import type { Db } from "../db/client.js";
import { storageWritten } from "../storage/records.js";
import type { ChainFiring } from "./chain-firing.js";
import type { OutcomeLog } from "./outcomes.js";
import type { RecentlyFinished } from "./recently-finished.js";
import { outcomesWritten } from "./records.js";
import type { Waiters } from "./waiters.js";

/** What a commit hands its results to, once D1 has them. */
export interface CommitParts {
  db: Db;
  bucket: R2Bucket;
  outcomes: OutcomeLog;
  finished: RecentlyFinished;
  waiters: Waiters;
  chains: ChainFiring;
  /** A write failed: the outcomes stay logged, and the caller arranges a retry. */
  onError: (e: unknown) => Promise<void>;
}

/**
 * Group commit of a dispatcher's outcome log to D1, in as many batches as it takes. A call made
 * while a write is in flight returns that write's promise, which then writes once more, so
 * outcomes that arrive during a write ride in the next batch rather than a write of their own.
 * After each batch: the log forgets it, the rows it finished are kept for readers, waiting
 * readers are woken, and the finished tasks' triggers are handed to the firing.
 */
export class GroupCommit {
  private writing: Promise<void> | undefined;
  private again = false;

  constructor(private readonly parts: CommitParts) {}

  /** True while a write is in flight (the log's memory must not be reloaded under it). */
  get inFlight(): boolean {
    return this.writing !== undefined;
  }

  run(): Promise<void> {
    if (this.writing) {
      this.again = true;
      return this.writing;
    }
    this.writing = (async () => {
      try {
        do {
          this.again = false;
          while (await this.batch());
        } while (this.again);
      } catch (e) {
        await this.parts.onError(e);
      } finally {
        this.writing = undefined;
      }
    })();
    return this.writing;
  }

  /** Writes one batch of outcomes; false when there was none. */
  private async batch(): Promise<boolean> {
    const { db, bucket, outcomes, finished, waiters, chains } = this.parts;
    const batch = outcomes.next();
    if (!batch.length) return false;
    const now = Date.now();
    const written = await outcomesWritten(db, bucket, batch, now);
    await storageWritten(db, bucket, batch);
    outcomes.remove(batch.map((o) => o.taskId));
    for (const row of written.finished.values()) finished.add(row, now);
    for (const o of batch) waiters.wake(o.taskId, written.finished.get(o.taskId) ?? null);
    chains.add([...written.finished.values()], written.triggers);
    return true;
  }
}
