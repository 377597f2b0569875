/**
 * The last `size` values read, by name, the least recently used dropped first: what a reader
 * pages through again (a list's chunks) is read from storage once. A value is immutable under its
 * name; whatever can change it must be part of the name.
 */
export class Recent<T> {
  private readonly values = new Map<string, T>();

  constructor(private readonly size: number) {}

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
    this.values.set(name, value);
    if (this.values.size > this.size) this.values.delete(this.values.keys().next().value!);
    return value;
  }
}
