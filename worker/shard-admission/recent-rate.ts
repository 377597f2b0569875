/** One minute, the window lease chunks are sized on. */
const MINUTE_MS = 60_000;

/**
 * Events in the last minute, estimated from two fixed one-minute windows (the previous one weighed
 * by how much of it still overlaps): constant memory per account, however fast it admits.
 */
export class RecentRate {
  private start = 0;
  private current = 0;
  private previous = 0;

  add(now: number): void {
    this.roll(now);
    this.current++;
  }

  lastMinute(now: number): number {
    this.roll(now);
    const overlap = Math.min(1, Math.max(0, 1 - (now - this.start) / MINUTE_MS));
    return this.current + this.previous * overlap;
  }

  private roll(now: number): void {
    if (now - this.start < MINUTE_MS) return;
    this.previous = now - this.start < 2 * MINUTE_MS ? this.current : 0;
    this.current = 0;
    this.start = now - ((now - this.start) % MINUTE_MS);
  }
}
