import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { capLog, fitTaskDone, frameBytes, splitBuildLog, type Finished } from "../../agent/control/frame-budget.js";
import { agentMessage, FRAME_BUDGET_BYTES, MAX_LOG_UPLOAD_BYTES } from "../../shared/protocol/messages.js";

/** Upload targets that keep what they were sent, as the control plane's PUT routes would. */
function recorder() {
  const sent: { body?: Buffer; log?: string[]; order: string[] } = { order: [] };
  return {
    sent,
    uploads: {
      body: async (bytes: Buffer) => {
        sent.body = bytes;
        sent.order.push("body");
      },
      log: async (json: Buffer) => {
        sent.log = JSON.parse(json.toString()) as string[];
        sent.order.push("log");
      },
    },
  };
}

const finished = (o: Partial<Finished> = {}): Finished => ({ taskId: "t1", status: 200, headers: { "content-type": "text/plain" }, body: Buffer.from("hi"), log: ["one"], durationMs: 5, ...o });
/** The most the protocol lets a function log: 10,000 lines of 8 KiB, 80 MB. */
const hugeLog = () => Array.from({ length: 10_000 }, (_, i) => `${i} `.padEnd(8192, "y"));

describe("a task's report within the frame budget", () => {
  it("sends a small report whole, uploading nothing", async () => {
    const { sent, uploads } = recorder();
    const frame = await fitTaskDone(finished(), uploads);
    expect(frame).toEqual({ type: "task.done", taskId: "t1", status: 200, headers: { "content-type": "text/plain" }, body: btoa("hi"), bodyUploaded: false, log: ["one"], logUploaded: false, durationMs: 5 });
    expect(sent.order).toEqual([]);
  });

  it("uploads a body that would not fit and keeps the log in the frame", async () => {
    const { sent, uploads } = recorder();
    const body = randomBytes(600 * 1024);
    const frame = await fitTaskDone(finished({ body }), uploads);
    expect(sent.body!.equals(body)).toBe(true);
    expect(frame).toMatchObject({ body: null, bodyUploaded: true, log: ["one"], logUploaded: false });
    expect(frameBytes(frame)).toBeLessThanOrEqual(FRAME_BUDGET_BYTES);
  });

  it("uploads the largest log the protocol allows, cut to the upload limit with a note of what was dropped", async () => {
    const { sent, uploads } = recorder();
    const frame = await fitTaskDone(finished({ log: hugeLog() }), uploads);
    expect(frame).toMatchObject({ log: [], logUploaded: true, body: btoa("hi"), bodyUploaded: false });
    expect(frameBytes(frame)).toBeLessThanOrEqual(FRAME_BUDGET_BYTES);
    expect(Buffer.byteLength(JSON.stringify(sent.log))).toBeLessThanOrEqual(MAX_LOG_UPLOAD_BYTES);
    expect(sent.log![0]).toBe(hugeLog()[0]);
    const kept = sent.log!.length - 1;
    const cut = { lines: 10_000 - kept, bytes: hugeLog().slice(kept).reduce((n, l) => n + l.length, 0) };
    expect(sent.log!.at(-1)).toBe(`[runtime] … ${cut.lines} lines (${cut.bytes} bytes) cut … (the log is limited to ${MAX_LOG_UPLOAD_BYTES} bytes)`);
    expect(frame.logCut).toEqual(cut);
    expect(agentMessage.safeParse(frame).success).toBe(true);
  });

  it("uploads both a large body and a large log, the larger first", async () => {
    const { sent, uploads } = recorder();
    const frame = await fitTaskDone(finished({ body: randomBytes(900 * 1024), log: Array.from({ length: 300 }, () => "z".repeat(1000)) }), uploads);
    expect(sent.order).toEqual(["body", "log"]);
    expect(frame).toMatchObject({ body: null, bodyUploaded: true, log: [], logUploaded: true });
  });

  it("cuts the log to fit when the assignment names no log URL (queued before protocol 2)", async () => {
    const { uploads } = recorder();
    const frame = await fitTaskDone(finished({ log: hugeLog() }), { body: uploads.body });
    expect(frame.logUploaded).toBe(false);
    expect(frame.log.at(-1)).toMatch(/^\[runtime\] … \d+ lines \(\d+ bytes\) cut … \(the log is limited to \d+ bytes\)$/);
    expect(frameBytes(frame)).toBeLessThanOrEqual(FRAME_BUDGET_BYTES);
  });

  it("keeps only Content-Type of a flood of response headers that would not fit", async () => {
    const headers = Object.fromEntries(Array.from({ length: 100 }, (_, i) => [`x-h${i}`, "v".repeat(8000)]));
    const frame = await fitTaskDone(finished({ headers: { ...headers, "Content-Type": "text/html" } }), recorder().uploads);
    expect(frame.headers).toEqual({ "Content-Type": "text/html" });
  });
});

describe("a build's log batches within the frame budget", () => {
  it("splits a batch of 1,000 lines of 8 KiB into frames under the budget, each numbered from its own first line", () => {
    const lines = Array.from({ length: 1000 }, (_, i) => `${i} `.padEnd(8192, "b"));
    const parts = splitBuildLog({ type: "build.log", buildId: "b1", first: 50, lines });
    expect(parts.length).toBeGreaterThan(1);
    for (const p of parts) expect(frameBytes(p)).toBeLessThanOrEqual(FRAME_BUDGET_BYTES);
    expect(parts.flatMap((p) => p.lines)).toEqual(lines);
    let next = 50;
    for (const p of parts) {
      expect(p.first).toBe(next);
      next += p.lines.length;
    }
  });

  it("leaves a batch that fits as it is", () => {
    const msg = { type: "build.log" as const, buildId: "b1", first: 0, lines: ["a", "b"] };
    expect(splitBuildLog(msg)).toEqual([msg]);
  });
});

describe("capLog", () => {
  it("keeps a log that fits untouched", () => {
    expect(capLog(["a", "b"], 1000)).toEqual({ lines: ["a", "b"], cut: { lines: 0, bytes: 0 } });
  });
});

describe("the note of what a cut dropped (issue 22, item 8)", () => {
  const note = /^\[runtime\] … (\d+) lines \((\d+) bytes\) cut … \(the log is limited to (\d+) bytes\)$/;

  it("arrives whole and last when the lines fill the bytes to the brim, for any budget", () => {
    for (const maxBytes of [200, 1000, 4096, 12_000]) {
      for (const width of [7, 50, 300]) {
        const log = Array.from({ length: 2000 }, (_, i) => `${i}`.padEnd(width, "q"));
        const { lines, cut } = capLog(log, maxBytes);
        expect(Buffer.byteLength(JSON.stringify(lines))).toBeLessThanOrEqual(maxBytes);
        const [, n, bytes, limit] = note.exec(lines.at(-1)!)!;
        expect([Number(n), Number(bytes), Number(limit)]).toEqual([cut.lines, cut.bytes, maxBytes]);
        expect(lines.length - 1 + cut.lines).toBe(2000);
      }
    }
  });

  it("counts lines past the protocol's 10,000 and keeps the runtime's last words after the note", () => {
    const log = [...Array.from({ length: 10_000 }, (_, i) => `line ${i}`), "[runtime] … 5 lines (50 bytes) cut … (a call's log keeps at most 10000 lines and 2097152 bytes)", "[runtime] timed out after 30 s; the container was killed"];
    const { lines, cut } = capLog(log, MAX_LOG_UPLOAD_BYTES);
    expect(lines).toHaveLength(10_000);
    expect(lines.slice(-2)).toEqual(log.slice(-2));
    expect(cut.lines).toBe(log.length - (lines.length - 1));
    expect(lines.at(-3)).toBe(`[runtime] … ${cut.lines} lines (${cut.bytes} bytes) cut … (the log is limited to ${MAX_LOG_UPLOAD_BYTES} bytes)`);
  });

  it("cuts a log without a log URL once, from the whole log, so its count is the whole count", async () => {
    const log = [...hugeLog(), "[runtime] done"];
    const frame = await fitTaskDone(finished({ log, logCut: { lines: 7, bytes: 70 } }), { body: recorder().uploads.body });
    const [, n, bytes] = note.exec(frame.log.at(-2)!)!;
    expect(frame.log.at(-1)).toBe("[runtime] done");
    expect(Number(n)).toBe(log.length - (frame.log.length - 1));
    expect(frame.logCut).toEqual({ lines: 7 + Number(n), bytes: 70 + Number(bytes) });
    expect(frameBytes(frame)).toBeLessThanOrEqual(FRAME_BUDGET_BYTES);
    expect(agentMessage.safeParse(frame).success).toBe(true);
  });
});
