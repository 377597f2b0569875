import type { TaskRow } from "../db/rows.js";

/**
 * Result readers parked on a dispatcher until their task's outcome is in D1 (memory only: after an
 * eviction they fall back to reading D1). Each gets the finished row, or null on wake-up without
 * one (cancelled) or when its time runs out.
 */
export class Waiters {
  private readonly byTask = new Map<string, Set<(row: TaskRow | null) => void>>();

  wait(taskId: string, ms: number): Promise<TaskRow | null> {
    return new Promise<TaskRow | null>((resolve) => {
      const set = this.byTask.get(taskId) ?? new Set();
      this.byTask.set(taskId, set);
      const done = (row: TaskRow | null) => {
        clearTimeout(timer);
        set.delete(done);
        if (!set.size) this.byTask.delete(taskId);
        resolve(row);
      };
      const timer = setTimeout(() => done(null), Math.max(0, Math.min(ms, 30_000)));
      set.add(done);
    });
  }

  wake(taskId: string, row: TaskRow | null): void {
    for (const w of [...(this.byTask.get(taskId) ?? [])]) w(row);
  }
}
