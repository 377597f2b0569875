/**
 * How many first calls each pool key saw within the last `windowMs`: the pool grows toward it, and
 * containers above it (and above the standing size) are stopped once idle for the same window.
 */
export class RecentDemand {
  private readonly seen = new Map<string, number[]>();

  constructor(private readonly windowMs: number) {}

  record(key: string, now = Date.now()): void {
    const times = this.prune(key, now);
    times.push(now);
    this.seen.set(key, times);
  }

  count(key: string, now = Date.now()): number {
    return this.prune(key, now).length;
  }

  private prune(key: string, now: number): number[] {
    const times = (this.seen.get(key) ?? []).filter((t) => now - t < this.windowMs);
    if (times.length === 0) this.seen.delete(key);
    else this.seen.set(key, times);
    return times;
  }
}
