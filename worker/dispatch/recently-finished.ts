import type { TaskRow } from "../db/rows.js";

/** How long, and how many, finished rows stay: result reads come within milliseconds of the outcome. */
const KEEP_MS = 5_000;
const MAX_ROWS = 512;

/**
 * The rows this dispatcher's group commits finished, for a few seconds: a result read that comes
 * just after its task was recorded (most, for a warm task of a few milliseconds: the outcome is in
 * D1 before the reader's request arrives) is answered here instead of by a D1 read. A finished row
 * changes no more until the retention sweep purges it, so the copy is what D1 holds; it is kept no
 * longer than the retention period either. Memory only: after an eviction, D1 answers.
 *
 * Kept without its input (up to 4 KiB inline, and no result read needs it): a row is then at most
 * a few KiB of result and log (records.ts keeps larger ones in R2), and MAX_ROWS of them a few MiB.
 */
export class RecentlyFinished {
  /** In finishing order, so the oldest go first. */
  private readonly rows = new Map<string, { row: TaskRow; until: number }>();

  constructor(private readonly keepMs = KEEP_MS) {}

  add(row: TaskRow, now: number): void {
    this.rows.delete(row.id);
    this.rows.set(row.id, { row: { ...row, input: null }, until: now + this.keepMs });
    for (const [id, r] of this.rows) {
      if (this.rows.size <= MAX_ROWS && r.until > now) break;
      this.rows.delete(id);
    }
  }

  get(taskId: string, now: number): TaskRow | undefined {
    const r = this.rows.get(taskId);
    return r && r.until > now ? r.row : undefined;
  }
}

/** The time a dispatcher keeps finished rows: KEEP_MS, or the retention period should it be shorter. */
export const keepFinishedMs = (retentionMs: number) => Math.min(KEEP_MS, retentionMs);
