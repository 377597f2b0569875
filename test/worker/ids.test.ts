import { describe, expect, it } from "vitest";
import { newId } from "../../worker/lib/ids.js";
import { RECORD_ID } from "./helpers.js";

describe("record ids", () => {
  it("are 26 lowercase characters that sort in creation order, even within one millisecond", () => {
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
});
