import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { newId, RANDOM_CHARS } from "../../worker/lib/ids.js";
import { newTaskId, shardOf, shardOfTask } from "../../worker/dispatch/client.js";
import { RECORD_ID } from "./helpers.js";

/** Positions at which two equally long strings differ. */
const differing = (a: string, b: string) => [...a].filter((ch, i) => ch !== b[i]).length;
const randomPart = (id: string) => id.slice(-RANDOM_CHARS);

describe("record ids", () => {
  it("are 30 lowercase characters that sort in creation order, even within one millisecond", () => {
    const t = Date.UTC(2026, 10, 21, 5, 14);
    const ids = Array.from({ length: 200 }, () => newId(t));
    for (const id of ids) expect(id).toMatch(RECORD_ID);
    expect([...ids].sort()).toEqual(ids);
    expect(new Set(ids).size).toBe(ids.length);
    // A clock that steps back a little does not reorder either.
    const later = newId(t - 5);
    expect(later > ids.at(-1)!).toBe(true);
    expect(newId(t + 1) > later).toBe(true);
    // A time well in the past is taken as given (backdated records).
    expect(newId(t - 60_000).slice(0, 10) < ids[0]!.slice(0, 10)).toBe(true);
  });

  it("keep their order past the sequence of one millisecond", () => {
    const t = Date.UTC(2026, 10, 21, 6, 0);
    const ids = Array.from({ length: 2500 }, () => newId(t));
    expect([...ids].sort()).toEqual(ids);
  });
});

describe("task ids minted in the same millisecond (guessing a public result link)", () => {
  it("share no derivable part: their random parts are fresh draws, not neighbours", () => {
    const sharded = { ...env, DISPATCH_SHARDS: "16" };
    const t = Date.UTC(2026, 10, 21, 7, 0);
    const ids = Array.from({ length: 50 }, () => newTaskId(sharded, "01functionfunctionfunction", t));
    for (let i = 1; i < ids.length; i++) {
      // Two independent draws of 18 base-32 characters agree at ~0.6 positions on average; a
      // counter (the old monotonic ids) differs in one or two.
      expect(differing(randomPart(ids[i - 1]!), randomPart(ids[i]!))).toBeGreaterThanOrEqual(10);
    }
    for (const id of ids) expect(shardOfTask(sharded, id)).toBe(shardOf(sharded, "01functionfunctionfunction"));
  });
});
