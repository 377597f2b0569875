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
    const log = new InvocationLog(100);
    log.push("stderr", Buffer.from("loading\n"));
    log.push("stdout", Buffer.from(`one\n${marker("c1")}two`));
    log.push("stderr", Buffer.from(marker("c1")));
    expect(await log.take("c1", 1000)).toEqual(["loading", "one"]);
    log.push("stdout", Buffer.from(`\n${marker("c2")}`));
    log.push("stderr", Buffer.from(marker("c2")));
    expect(await log.take("c2", 1000)).toEqual(["two"]);
  });

  it("waits for a marker that arrives after the response", async () => {
    const log = new InvocationLog(100);
    log.push("stdout", Buffer.from(`late\n${marker("c1")}`));
    setTimeout(() => log.push("stderr", Buffer.from(`warn\n${marker("c1")}`)), 20);
    expect(await log.take("c1", 1000)).toEqual(["late", "warn"]);
  });

  it("drops lines past the cap and says how many", async () => {
    const log = new InvocationLog(2);
    log.push("stdout", Buffer.from(`a\nb\nc\nd\n${marker("c1")}`));
    log.push("stderr", Buffer.from(marker("c1")));
    expect(await log.take("c1", 1000)).toEqual(["a", "b", "[runtime] 2 more log lines dropped (limit 2 per call)"]);
  });
});
