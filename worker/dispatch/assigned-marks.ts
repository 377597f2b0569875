import type { Db } from "../db/client.js";
import { tasksAssigned, type AssignedMark } from "./records.js";

/**
 * "Assigned" marks wait this long before their D1 write: most warm tasks finish sooner, and their
 * outcome carries the assignment instead, which saves a write per task. Many marks share one batch.
 */
const MARK_DELAY_MS = 100;

/**
 * The D1 columns `assigned`, `node` and `networkLatency` of running tasks: display only (the
 * dispatcher's queue is the truth), so kept in memory until written; an eviction loses them and the
 * outcome restores them. A late write cannot undo a finish (it is conditional).
 */
export class AssignedMarks {
  private readonly pending = new Map<string, AssignedMark>();
  private timer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    private readonly db: Db,
    /** Whether D1 has a row to mark (a rowless task has none). */
    private readonly inD1: (taskId: string) => boolean,
    private readonly onError: (e: unknown) => void,
  ) {}

  add(mark: AssignedMark): void {
    this.pending.set(mark.taskId, mark);
    this.timer ??= setTimeout(() => void this.write(), MARK_DELAY_MS);
  }

  /** The mark of a task that is finishing (its outcome writes it), no longer to be written alone. */
  take(taskId: string): AssignedMark | undefined {
    const mark = this.pending.get(taskId);
    this.pending.delete(taskId);
    return mark;
  }

  private async write(): Promise<void> {
    this.timer = undefined;
    // A rowless task's mark stays until its outcome takes it (for its round trip): D1 gets none.
    const marks = [...this.pending.values()].filter((m) => this.inD1(m.taskId));
    for (const m of marks) this.pending.delete(m.taskId);
    try {
      await tasksAssigned(this.db, marks);
    } catch (e) {
      this.onError(e);
    }
  }
}
