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
    const marks = [...this.pending.values()];
    this.pending.clear();
    try {
      await tasksAssigned(this.db, marks);
    } catch (e) {
      this.onError(e);
    }
  }
}
