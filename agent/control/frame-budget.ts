import {
  FRAME_BUDGET_BYTES,
  MAX_LOG_LINE_CHARS,
  MAX_LOG_LINES,
  MAX_LOG_UPLOAD_BYTES,
  type AgentMessage,
  type LogCut,
} from "../../shared/protocol/messages.js";

type TaskDone = Extract<AgentMessage, { type: "task.done" }>;
type BuildLog = Extract<AgentMessage, { type: "build.log" }>;

/** A finished invocation as the runner gives it, before it becomes a frame. */
export interface Finished {
  taskId: string;
  status: number;
  headers: Record<string, string>;
  body: Buffer;
  log: string[];
  /** What the runner already cut from the log (its last lines say so too). */
  logCut?: LogCut;
  durationMs: number;
}

/** Where parts that do not fit a frame go: PUT to the control plane. `log` is absent when the assignment named no log URL. */
export interface Uploads {
  body(bytes: Buffer): Promise<void>;
  log?: (json: Buffer) => Promise<void>;
}

export const frameBytes = (m: AgentMessage): number => Buffer.byteLength(JSON.stringify(m));

/** A line's share of a JSON array: its JSON string and a comma. */
const jsonBytes = (line: string): number => Buffer.byteLength(JSON.stringify(line)) + 1;
const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);
/** The runtime's own lines (its verdict on the call, the call's cut note) start so. */
const RUNTIME_LINE = "[runtime] ";
/** Trailing runtime lines a cut keeps at the end of the log. */
const MAX_KEPT_TAIL = 3;

const capNote = (cut: LogCut, maxBytes: number) => `[runtime] … ${cut.lines} lines (${cut.bytes} bytes) cut … (the log is limited to ${maxBytes} bytes)`;

/**
 * The log as a JSON array of at most `maxBytes` and MAX_LOG_LINES lines: its first lines that fit,
 * a note of how many lines (and bytes) were cut, then the runtime's last lines (what became of the
 * call, and the call's own cut note) when the log ended with them. The note's room is set aside
 * before any line is kept, for the longest note this log could need, so the note always arrives
 * whole. Lines are clipped to the protocol's length first.
 */
export function capLog(log: string[], maxBytes: number): { lines: string[]; cut: LogCut } {
  const lines = log.map((l) => l.slice(0, MAX_LOG_LINE_CHARS));
  const sizes = lines.map(jsonBytes);
  // "[" and "]" take the place of the last line's comma and one more byte.
  if (lines.length <= MAX_LOG_LINES && 1 + sum(sizes) <= maxBytes) return { lines, cut: { lines: 0, bytes: 0 } };
  let tailAt = lines.length;
  while (tailAt > 0 && lines.length - tailAt < MAX_KEPT_TAIL && lines[tailAt - 1]!.startsWith(RUNTIME_LINE)) tailAt -= 1;
  const widestNote = jsonBytes(capNote({ lines: lines.length, bytes: sum(lines.map((l) => Buffer.byteLength(l))) }, maxBytes));
  let tailBytes = sum(sizes.slice(tailAt));
  if (1 + widestNote + tailBytes > maxBytes) {
    tailAt = lines.length;
    tailBytes = 0;
  }
  const room = maxBytes - 1 - widestNote - tailBytes;
  const roomLines = MAX_LOG_LINES - 1 - (lines.length - tailAt);
  let kept = 0;
  let used = 0;
  while (kept < tailAt && kept < roomLines && used + sizes[kept]! <= room) used += sizes[kept++]!;
  const dropped = lines.slice(kept, tailAt);
  const cut = { lines: dropped.length, bytes: sum(dropped.map((l) => Buffer.byteLength(l))) };
  return { lines: [...lines.slice(0, kept), capNote(cut, maxBytes), ...lines.slice(tailAt)], cut };
}

/**
 * The task's report as one frame within `budget`. What would not fit goes over HTTP first, the
 * larger part first: the body (to the result URL) and the log (to the log URL); should the
 * assignment name no log URL, the log is cut to fit instead. Response headers past the budget
 * (only Content-Type is ever served) are reduced to Content-Type. `logCut` counts every line cut,
 * by the runner and here.
 */
export async function fitTaskDone(done: Finished, uploads: Uploads, budget = FRAME_BUDGET_BYTES): Promise<TaskDone> {
  const before = done.logCut ?? { lines: 0, bytes: 0 };
  const capped = capLog(done.log, MAX_LOG_UPLOAD_BYTES);
  const frame: TaskDone = {
    type: "task.done",
    taskId: done.taskId,
    status: done.status,
    headers: done.headers,
    body: done.body.length ? done.body.toString("base64") : null,
    bodyUploaded: false,
    log: capped.lines,
    logUploaded: false,
    durationMs: done.durationMs,
  };
  const countCut = (cut: LogCut) => {
    if (before.lines + cut.lines > 0) frame.logCut = { lines: before.lines + cut.lines, bytes: before.bytes + cut.bytes };
  };
  countCut(capped.cut);
  const moveBody = async () => {
    await uploads.body(done.body);
    frame.body = null;
    frame.bodyUploaded = true;
  };
  const moveLog = async () => {
    if (uploads.log) {
      await uploads.log(Buffer.from(JSON.stringify(frame.log)));
      frame.log = [];
      frame.logUploaded = true;
      return;
    }
    // Cut from the whole log, not the cut one: a second note would only count the first as a line.
    const smaller = capLog(done.log, Math.floor(budget / 2));
    frame.log = smaller.lines;
    countCut(smaller.cut);
  };
  const moves = [
    { size: frame.body?.length ?? 0, move: moveBody },
    { size: frame.log.length ? Buffer.byteLength(JSON.stringify(frame.log)) : 0, move: moveLog },
  ].sort((a, b) => b.size - a.size);
  for (const { size, move } of moves) if (size > 0 && frameBytes(frame) > budget) await move();
  if (frameBytes(frame) > budget) frame.headers = Object.fromEntries(Object.entries(frame.headers).filter(([k]) => /^content-type$/i.test(k)));
  return frame;
}

/**
 * A build.log batch as frames within `budget`: split where it would not fit, each part numbered
 * from its own first line, so a part re-sent after a reconnect is still stored once.
 */
export function splitBuildLog(msg: BuildLog, budget = FRAME_BUDGET_BYTES): BuildLog[] {
  if (frameBytes(msg) <= budget) return [msg];
  const overhead = frameBytes({ ...msg, lines: [] });
  const parts: BuildLog[] = [];
  let lines: string[] = [];
  let bytes = overhead;
  let first = msg.first;
  for (const line of msg.lines) {
    const size = Buffer.byteLength(JSON.stringify(line)) + 1;
    if (lines.length && bytes + size > budget) {
      parts.push({ ...msg, first, lines });
      first += lines.length;
      lines = [];
      bytes = overhead;
    }
    lines.push(line);
    bytes += size;
  }
  if (lines.length) parts.push({ ...msg, first, lines });
  return parts;
}
