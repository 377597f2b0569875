import {
  FRAME_BUDGET_BYTES,
  MAX_LOG_LINE_CHARS,
  MAX_LOG_LINES,
  MAX_LOG_UPLOAD_BYTES,
  type AgentMessage,
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
  durationMs: number;
}

/** Where parts that do not fit a frame go: PUT to the control plane. `log` is absent when the assignment named no log URL. */
export interface Uploads {
  body(bytes: Buffer): Promise<void>;
  log?: (json: Buffer) => Promise<void>;
}

export const frameBytes = (m: AgentMessage): number => Buffer.byteLength(JSON.stringify(m));

/**
 * The lines of `log` whose JSON array fits in `maxBytes`, with a last line saying how many were
 * dropped. Lines are clipped to the protocol's count and length first.
 */
export function capLog(log: string[], maxBytes: number): string[] {
  const lines = log.slice(0, MAX_LOG_LINES).map((l) => l.slice(0, MAX_LOG_LINE_CHARS));
  // Room for the brackets and the note that replaces what is cut.
  const room = maxBytes - 2 - 100;
  let bytes = 0;
  for (let i = 0; i < lines.length; i++) {
    bytes += Buffer.byteLength(JSON.stringify(lines[i])) + 1;
    if (bytes > room) {
      const kept = lines.slice(0, Math.min(i, MAX_LOG_LINES - 1));
      return [...kept, `[runtime] ${lines.length - kept.length} more log lines dropped (the log is limited to ${maxBytes} bytes)`];
    }
  }
  return lines;
}

/**
 * The task's report as one frame within `budget`. What would not fit goes over HTTP first, the
 * larger part first: the body (to the result URL) and the log (to the log URL); should the
 * assignment name no log URL, the log is cut to fit instead. Response headers past the budget
 * (only Content-Type is ever served) are reduced to Content-Type.
 */
export async function fitTaskDone(done: Finished, uploads: Uploads, budget = FRAME_BUDGET_BYTES): Promise<TaskDone> {
  const frame: TaskDone = {
    type: "task.done",
    taskId: done.taskId,
    status: done.status,
    headers: done.headers,
    body: done.body.length ? done.body.toString("base64") : null,
    bodyUploaded: false,
    log: capLog(done.log, MAX_LOG_UPLOAD_BYTES),
    logUploaded: false,
    durationMs: done.durationMs,
  };
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
    } else frame.log = capLog(frame.log, Math.floor(budget / 2));
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
