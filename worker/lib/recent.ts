/**
 * The last values read, by name, the least recently used dropped first: what a reader pages
 * through again (a list's chunks) is read from storage once. A value is immutable under its name;
 * whatever can change it must be part of the name. What is kept is bounded by `size`: a count of
 * values, or of what `weigh` says each one holds (records, say), so small values are kept many.
 */
export class Recent<T> {
  private readonly values = new Map<string, T>();
  private held = 0;

  constructor(
    private readonly size: number,
    /** What one value counts against `size`: at least 1, so a bound on weight also bounds the count. */
    private readonly weigh: (value: T) => number = () => 1,
  ) {}

  /** The value kept under `name`, if any (and it becomes the most recent). */
  peek(name: string): T | undefined {
    const hit = this.values.get(name);
    if (hit !== undefined) {
      this.values.delete(name);
      this.values.set(name, hit);
    }
    return hit;
  }

  /** The value kept under `name`, else what `read` gives, kept (a read that fails keeps nothing). */
  async get(name: string, read: () => Promise<T>): Promise<T> {
    const hit = this.peek(name);
    if (hit !== undefined) return hit;
    const value = await read();
    const had = this.values.get(name);
    if (had !== undefined) this.drop(name, had);
    this.values.set(name, value);
    this.held += this.weightOf(value);
    // The newest value stays even when it alone is over the bound: its reader is about to use it.
    while (this.held > this.size && this.values.size > 1) {
      const [oldest, v] = this.values.entries().next().value!;
      this.drop(oldest, v);
    }
    return value;
  }

  private weightOf(value: T): number {
    return Math.max(1, this.weigh(value));
  }

  private drop(name: string, value: T): void {
    this.values.delete(name);
    this.held -= this.weightOf(value);
  }
}
