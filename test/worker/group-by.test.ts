import { describe, expect, it } from "vitest";
import { groupBy } from "../../worker/lib/group-by.js";

describe("groupBy", () => {
  it("keeps each group's items, and the groups, in the order first seen", () => {
    const groups = groupBy(["b1", "a1", "b2", "c1", "a2"], (s) => s[0]);
    expect([...groups]).toEqual([
      ["b", ["b1", "b2"]],
      ["a", ["a1", "a2"]],
      ["c", ["c1"]],
    ]);
  });
});
