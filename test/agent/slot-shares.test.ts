import { describe, expect, it } from "vitest";
import { freeInShard, slotShare } from "../../shared/protocol/slot-shares.js";

const shares = (slots: number, shards: number) => Array.from({ length: shards }, (_, s) => slotShare(slots, shards, s));

describe("slots offered to each dispatcher shard", () => {
  it("adds up to the agent's slots across shards, so the shards together never over-assign it", () => {
    for (const shards of [1, 2, 3, 4, 7, 16])
      for (let slots = shards; slots <= 64; slots++) {
        const each = shares(slots, shards);
        expect(each.reduce((a, b) => a + b, 0)).toBe(slots);
        expect(Math.max(...each) - Math.min(...each)).toBeLessThanOrEqual(1);
      }
  });

  it("offers one shard everything when there is one shard", () => {
    expect(shares(8, 1)).toEqual([8]);
  });

  it("splits unevenly counts with the remainder on the first shards", () => {
    expect(shares(10, 4)).toEqual([3, 3, 2, 2]);
  });

  it("still serves every shard with one slot each when there are fewer slots than shards", () => {
    expect(shares(2, 4)).toEqual([1, 1, 1, 1]);
  });

  it("offers nothing to any shard while draining (zero slots)", () => {
    expect(shares(0, 4)).toEqual([0, 0, 0, 0]);
  });
});

describe("free slots a heartbeat reports to a shard", () => {
  it("counts only the work that shard assigned against that shard's share", () => {
    expect(freeInShard(8, 2, 0, 1)).toBe(3);
    expect(freeInShard(8, 2, 1, 0)).toBe(4);
    expect(freeInShard(8, 2, 1, 4)).toBe(0);
  });

  it("never reports a negative count when a shard holds more than its share (a resumed hello)", () => {
    expect(freeInShard(8, 4, 0, 5)).toBe(0);
  });
});
