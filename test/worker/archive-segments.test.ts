import { describe, expect, it } from "vitest";
import { decodeSegments, encodeSegments, segmentIndexOf, segmentKey, type Segments } from "../../worker/db/archive-segments.js";

describe("segmentKey", () => {
  it("is empty for a chunk's first segment", () => {
    expect(segmentKey(undefined, "01jz0000000000000000000000000a")).toBe("");
  });

  it("is the shortest prefix of the first id that sorts after the id before it", () => {
    expect(segmentKey("01jz3k4m5n00aaaaaaaaaaaaaaaaaa", "01jz3k4m5p00bbbbbbbbbbbbbbbbbb")).toBe("01jz3k4m5p");
    // The same millisecond and sequence (two isolates): the key runs into the random part.
    expect(segmentKey("01jz3k4m5n00aaaaaaaaaaaaaaaaaa", "01jz3k4m5n00ab0000000000000000")).toBe("01jz3k4m5n00ab");
  });

  it("refuses records out of id order, which no key could separate", () => {
    expect(() => segmentKey("01jz3k4m5p", "01jz3k4m5n")).toThrow();
    expect(() => segmentKey("01jz3k4m5p", "01jz3k4m5p")).toThrow();
  });

  it("puts every record of a chunk in its own segment, however close its ids", () => {
    const alphabet = "0123456789abcdefghjkmnpqrstvwxyz";
    const tail = (n: number) => [3, 2, 1, 0].map((d) => alphabet[Math.floor(n / 32 ** d) % 32]).join("");
    // Ids that agree on 26 of their 30 characters: the closest neighbours there are.
    const ids = Array.from({ length: 400 }, (_, i) => "01jz3k4m5n00" + "a".repeat(14) + tail(i * 37));
    const perSegment = 7;
    const segments: Segments = [];
    for (let i = 0; i < ids.length; i += perSegment) segments.push([segmentKey(ids[i - 1], ids[i]!), i]);
    ids.forEach((id, i) => expect(segmentIndexOf(segments, id)).toBe(Math.floor(i / perSegment)));
  });
});

describe("segmentIndexOf", () => {
  const segments: Segments = [["", 0], ["01jz3k4m5p", 812], ["01jz3k4m5q0", 1_700]];

  it("is the last segment whose key is at or before the id", () => {
    expect(segmentIndexOf(segments, "01jz3k4m5n00aaaaaaaaaaaaaaaaaa")).toBe(0);
    expect(segmentIndexOf(segments, "01jz3k4m5p")).toBe(1);
    expect(segmentIndexOf(segments, "01jz3k4m5pzzzzzzzzzzzzzzzzzzzz")).toBe(1);
    expect(segmentIndexOf(segments, "01jz3k4m5q00aaaaaaaaaaaaaaaaaa")).toBe(2);
    expect(segmentIndexOf(segments, "zz")).toBe(2);
  });

  it("is -1 with no segments, or for an id before every key", () => {
    expect(segmentIndexOf([], "01jz3k4m5p")).toBe(-1);
    expect(segmentIndexOf([["01jz3k4m5p", 0]], "01jz3k4m5n")).toBe(-1);
  });
});

describe("encodeSegments and decodeSegments", () => {
  it("round-trip, offsets in base 36", () => {
    const segments: Segments = [["", 0], ["01jz3k4m5p", 4_321], ["01jz3k4m5q0", 1_000_000_000]];
    expect(encodeSegments(segments)).toBe(":0,01jz3k4m5p:3c1,01jz3k4m5q0:gjdgxs");
    expect(decodeSegments(encodeSegments(segments))).toEqual(segments);
    expect(decodeSegments("")).toEqual([]);
  });

  it("read the JSON of whole first ids that chunks were written with before keys were cut", () => {
    expect(decodeSegments('[["01jz3k4m5n00aaaaaaaaaaaaaaaaaa",0],["01jz3k4m5p00bbbbbbbbbbbbbbbbbb",812]]')).toEqual([
      ["01jz3k4m5n00aaaaaaaaaaaaaaaaaa", 0],
      ["01jz3k4m5p00bbbbbbbbbbbbbbbbbb", 812],
    ]);
  });

  it("take nothing that is not segments", () => {
    for (const text of ["[", '[["a",-1]]', '[["a",3]]', '[["a",0],["b",0]]', '[["b",0],["a",9]]', ":1", ":0,b:9,c:2", ":0,b:9,b:a", '[["a",1.5]]', '[["a"]]', '{"a":1}', "01jz", "01jz:", "01JZ:1", "a:1,,b:2", "a:1;b:2", "a b:1"]) {
      expect(decodeSegments(text), text).toBeUndefined();
    }
  });
});
