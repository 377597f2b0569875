/**
 * Slots for long polls (`?wait`) on public result links. Anyone may hold one without a token, and
 * each holds a request and a dispatcher call open for up to 30 s, so their number is bounded per
 * task and per isolate. Beyond the bound a read answers at once with what there is (the task's
 * state now), as a read without `?wait` would: a caller polls again instead of waiting.
 */
export class ResultWaits {
  private readonly byTask = new Map<string, number>();
  private total = 0;

  constructor(
    readonly perTask: number,
    readonly perIsolate: number,
  ) {}

  /** A slot to wait on `taskId`, released by the function returned; null when none is free. */
  take(taskId: string): (() => void) | null {
    const held = this.byTask.get(taskId) ?? 0;
    if (held >= this.perTask || this.total >= this.perIsolate) return null;
    this.byTask.set(taskId, held + 1);
    this.total += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total -= 1;
      const left = (this.byTask.get(taskId) ?? 1) - 1;
      if (left > 0) this.byTask.set(taskId, left);
      else this.byTask.delete(taskId);
    };
  }

  /** Runs `wait` with the seconds asked for when a slot is free (held meanwhile), else with 0. */
  async during<T>(taskId: string, seconds: number, wait: (seconds: number) => Promise<T>): Promise<T> {
    const release = seconds > 0 ? this.take(taskId) : null;
    try {
      return await wait(release ? seconds : 0);
    } finally {
      release?.();
    }
  }

  /** Long polls open on a task now. */
  waitingOn(taskId: string): number {
    return this.byTask.get(taskId) ?? 0;
  }
}

/** A page and a few tabs polling one result is normal; more on one task is a flood. */
export const publicResultWaits = new ResultWaits(8, 500);
