import { describe, expect, it } from "vitest";
import { LineSplitter } from "../../agent/docker/output.js";
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

  it("bounds a line that never ends", () => {
    const lines: string[] = [];
    const splitter = new LineSplitter((l) => lines.push(l));
    splitter.push(Buffer.alloc(40 * 1024, "x"));
    expect(lines.length).toBe(2);
    expect(lines.every((l) => l.length === 16 * 1024)).toBe(true);
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
