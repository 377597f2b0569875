import type { TaskInput } from "../../shared/schemas/task.js";
import type { DeadLetterBody } from "../../shared/schemas/retry.js";
import type { TaskRow } from "../db/rows.js";

/** The log's last lines a dead letter carries, and at most this many characters of them. */
const TAIL_LINES = 20;
const TAIL_CHARS = 4096;

const utf8Base64 = (text: string) => {
  let bin = "";
  for (const b of new TextEncoder().encode(text)) bin += String.fromCharCode(b);
  return btoa(bin);
};

export function logTail(lines: string[]): string {
  const tail = lines.slice(-TAIL_LINES).join("\n");
  return tail.length > TAIL_CHARS ? tail.slice(-TAIL_CHARS) : tail;
}

/** What the dead-letter function receives about a task whose attempts ran out: its input whole, its end, its log's tail. */
export function deadLetterBodyOf(t: TaskRow, input: TaskInput | null, log: string[]): DeadLetterBody {
  const headers = input?.headers ?? {};
  const body = input?.body == null ? "" : input.bodyEncoding === "base64" ? input.body : utf8Base64(input.body);
  return {
    taskId: t.id,
    functionId: t.functionId,
    status: t.status,
    attempts: t.attempts,
    input: { method: input?.method ?? "POST", query: input?.query ?? {}, headers, contentType: headers["content-type"] ?? null, body },
    logTail: logTail(log),
  };
}
