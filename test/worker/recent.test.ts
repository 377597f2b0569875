import { describe, expect, it } from "vitest";
import { Recent } from "../../worker/lib/recent.js";

const read = (value: number[]) => () => Promise.resolve(value);

describe("Recent.get", () => {
  it("reads a name once while it is kept, and drops the least recently used past its size", async () => {
    const recent = new Recent<number[]>(2);
    let reads = 0;
    const counted = (v: number[]) => () => (reads++, Promise.resolve(v));
    await recent.get("a", counted([1]));
    await recent.get("b", counted([2]));
    expect(await recent.get("a", counted([9]))).toEqual([1]);
    await recent.get("c", counted([3]));
    expect(reads).toBe(3);
    expect(recent.peek("b")).toBeUndefined();
    expect(recent.peek("a")).toEqual([1]);
    expect(recent.peek("c")).toEqual([3]);
  });

  it("bounds what it keeps by weight when weighed, each value counting at least 1", async () => {
    const recent = new Recent<number[]>(10, (v) => v.length);
    for (const name of ["e1", "e2", "e3"]) await recent.get(name, read([]));
    await recent.get("six", read([1, 2, 3, 4, 5, 6]));
    expect(["e1", "e2", "e3", "six"].map((n) => recent.peek(n) !== undefined)).toEqual([true, true, true, true]);
    // 9 held; 4 more is 13: the least recent go until 10 or less is held (e1's 1 and e2's 1, then e3's 1 → 10).
    await recent.get("four", read([1, 2, 3, 4]));
    expect(["e1", "e2", "e3", "six", "four"].map((n) => recent.peek(n) !== undefined)).toEqual([false, false, false, true, true]);
  });

  it("keeps the value just read even when it alone weighs more than its size, and nothing of a read that failed", async () => {
    const recent = new Recent<number[]>(3, (v) => v.length);
    await recent.get("small", read([1]));
    expect(await recent.get("large", read([1, 2, 3, 4, 5]))).toHaveLength(5);
    expect(recent.peek("large")).toHaveLength(5);
    expect(recent.peek("small")).toBeUndefined();
    await expect(recent.get("broken", () => Promise.reject(new Error("gone")))).rejects.toThrow("gone");
    expect(recent.peek("broken")).toBeUndefined();
    expect(recent.peek("large")).toHaveLength(5);
  });
});
