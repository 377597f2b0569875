import { describe, expect, it } from "vitest";
import { LineSplitter, MAX_LINE_CHARS } from "../../agent/docker/output.js";
import { InvocationLog } from "../../agent/runner/invocation-log.js";

const marker = (id: string) => `\x1eGCFAAS_END:${id}\x1e\n`;

describe("line splitting", () => {
  it("splits lines across chunk boundaries, also inside a UTF-8 character", () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((l) => lines.push(l));
    const bytes = Buffer.from("héllo\r\nwor");
    splitter.push(bytes.subarray(0, 2));
    splitter.push(bytes.subarray(2));
    splitter.push(Buffer.from("ld\n"));
    expect(lines).toEqual(["héllo", "world"]);
  });

  it("keeps a partial line printed just before an end marker as its own line", () => {
    const lines: string[] = [];
    const markers: string[] = [];
    const splitter = new LineSplitter((l) => lines.push(l), (id) => markers.push(id));
    splitter.push(Buffer.from(`no newline${marker("a")}next\n`));
    expect(lines).toEqual(["no newline", "next"]);
    expect(markers).toEqual(["a"]);
  });

  it("cuts a long line to its first characters and says how many were dropped", () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((l) => lines.push(l));
    splitter.push(Buffer.alloc(40 * 1024, "x"));
    expect(lines).toEqual([]);
    splitter.push(Buffer.from("y\nnext\n"));
    expect(lines).toEqual([`${"x".repeat(MAX_LINE_CHARS)} [line cut: ${40 * 1024 + 1 - MAX_LINE_CHARS} more characters]`, "next"]);
    expect(lines[0]!.length).toBeLessThanOrEqual(8192);
  });
});

describe("output that never ends a line (issue 17, finding 9)", () => {
  it("holds a bounded buffer through a marker's start and 100 MiB without a newline, then still finds the real marker", () => {
    const lines: string[] = [];
    const markers: string[] = [];
    const splitter = new LineSplitter((l) => lines.push(l), (id) => markers.push(id));
    splitter.push(Buffer.from("before\n\x1eGCFAAS_END:"));
    const chunk = Buffer.alloc(64 * 1024, "z");
    let largest = 0;
    for (let sent = 0; sent < 100 * 1024 * 1024; sent += chunk.length) {
      splitter.push(chunk);
      largest = Math.max(largest, splitter.bufferedChars);
    }
    expect(largest).toBeLessThanOrEqual(MAX_LINE_CHARS + 100);
    splitter.push(Buffer.from(`tail${marker("c1")}after\n`));
    expect(markers).toEqual(["c1"]);
    expect(lines[0]).toBe("before");
    expect(lines[1]).toMatch(/^\x1eGCFAAS_END:z+ \[line cut: \d+ more characters\]$/);
    expect(lines[1]!.length).toBeLessThanOrEqual(8192);
    expect(lines[2]).toBe("after");
    expect(splitter.bufferedChars).toBe(0);
  });

  it("finds a marker that follows a long line in the same chunk", () => {
    const lines: string[] = [];
    const markers: string[] = [];
    const splitter = new LineSplitter((l) => lines.push(l), (id) => markers.push(id));
    splitter.push(Buffer.from(`${"a".repeat(MAX_LINE_CHARS + 10)}${marker("c2")}`));
    expect(markers).toEqual(["c2"]);
    expect(lines).toEqual([`${"a".repeat(MAX_LINE_CHARS)} [line cut: 10 more characters]`]);
  });
});

describe("per-call log", () => {
  it("gives each call the lines before its markers, and earlier output to the next call", async () => {
    const log = new InvocationLog({ maxLines: 100, maxBytes: 1 << 20 });
    log.push("stderr", Buffer.from("loading\n"));
    log.push("stdout", Buffer.from(`one\n${marker("c1")}two`));
    log.push("stderr", Buffer.from(marker("c1")));
    expect((await log.take("c1", 1000)).lines).toEqual(["loading", "one"]);
    log.push("stdout", Buffer.from(`\n${marker("c2")}`));
    log.push("stderr", Buffer.from(marker("c2")));
    expect((await log.take("c2", 1000)).lines).toEqual(["two"]);
  });

  it("waits for a marker that arrives after the response", async () => {
    const log = new InvocationLog({ maxLines: 100, maxBytes: 1 << 20 });
    log.push("stdout", Buffer.from(`late\n${marker("c1")}`));
    setTimeout(() => log.push("stderr", Buffer.from(`warn\n${marker("c1")}`)), 20);
    expect((await log.take("c1", 1000)).lines).toEqual(["late", "warn"]);
  });

  it("keeps at most maxLines lines, its cut note included, and counts the lines and bytes it cut", async () => {
    const bounds = { maxLines: 3, maxBytes: 1 << 20 };
    const log = new InvocationLog(bounds);
    log.push("stdout", Buffer.from(`a\nbb\nccc\ndddd\n${marker("c1")}`));
    log.push("stderr", Buffer.from(marker("c1")));
    const taken = await log.take("c1", 1000);
    expect(taken.cut).toEqual({ lines: 2, bytes: 7 });
    expect(taken.lines).toEqual(["a", "bb", `[runtime] … 2 lines (7 bytes) cut … (a call's log keeps at most 3 lines and ${1 << 20} bytes)`]);
  });
});

describe("memory a call's output may take (issue 22, item 4)", () => {
  it("holds at most maxBytes while a call prints far more, counts the rest, and frees it all when taken", async () => {
    const bounds = { maxLines: 10_000, maxBytes: 64 * 1024 };
    const log = new InvocationLog(bounds);
    const line = `${"é".repeat(499)}\n`; // 998 bytes of UTF-8 a line, 2 bytes a character
    for (let i = 0; i < 5000; i++) log.push(i % 2 ? "stderr" : "stdout", Buffer.from(line));
    expect(log.retainedBytes).toBeLessThanOrEqual(bounds.maxBytes);
    log.push("stdout", Buffer.from(marker("c1")));
    log.push("stderr", Buffer.from(marker("c1")));
    const taken = await log.take("c1", 1000);
    const kept = Math.floor(bounds.maxBytes / 998);
    expect(taken.lines).toHaveLength(kept + 1);
    expect(taken.cut).toEqual({ lines: 5000 - kept, bytes: (5000 - kept) * 998 });
    expect(taken.lines.at(-1)).toBe(`[runtime] … ${5000 - kept} lines (${(5000 - kept) * 998} bytes) cut … (a call's log keeps at most 10000 lines and ${bounds.maxBytes} bytes)`);
    expect(log.peakRetainedBytes).toBe(kept * 998);
    expect(log.retainedBytes).toBe(0);
  });

  it("gives the next call its own bound once a call took its log", async () => {
    const log = new InvocationLog({ maxLines: 2, maxBytes: 1 << 20 });
    log.push("stdout", Buffer.from(`a\nb\nc\n${marker("c1")}`));
    log.push("stderr", Buffer.from(marker("c1")));
    expect((await log.take("c1", 1000)).cut.lines).toBe(2);
    log.push("stdout", Buffer.from(`d\n${marker("c2")}`));
    log.push("stderr", Buffer.from(marker("c2")));
    expect(await log.take("c2", 1000)).toEqual({ lines: ["d"], cut: { lines: 0, bytes: 0 } });
  });

  it("does not hold lines filed under a marker no call waits for (a function printing fake markers)", async () => {
    const log = new InvocationLog({ maxLines: 100, maxBytes: 1 << 20 });
    log.push("stdout", Buffer.from(`x\n${marker("fake")}`));
    log.push("stderr", Buffer.from(`y\n${marker("fake")}`));
    log.push("stdout", Buffer.from(`z\n${marker("c1")}`));
    log.push("stderr", Buffer.from(marker("c1")));
    expect((await log.take("c1", 1000)).lines).toEqual(["x", "y", "z"]);
    expect(log.retainedBytes).toBe(0);
  });
});
