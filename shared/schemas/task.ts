import { z } from "zod";
import { intParam, recordId } from "./common.js";

export const MAX_JSON_BYTES = 10 * 1024 * 1024;
/** A task's body, of any Content-Type (task creation, /gc calls, schedule payloads). */
export const MAX_TASK_BODY_BYTES = 10 * 1024 * 1024;

/** Final statuses besides the function's own HTTP status. */
export const TASK_STATUS = {
  running: 0,
  ok: 200,
  crashed: 500,
  timedOut: 504,
  cancelled: 410,
} as const;

export const taskListQuery = z.strictObject({
  functionId: recordId.optional(),
  limit: intParam(1, 1000, 100),
  before: recordId.optional(),
});

export const resultQuery = z.strictObject({
  wait: intParam(0, 30, 0),
});

/** What a function receives for one task (the same for API, /gc and trigger-issued tasks). */
export const taskInput = z.object({
  method: z.string(),
  query: z.record(z.string(), z.union([z.string(), z.array(z.string())])),
  headers: z.record(z.string(), z.string()),
  body: z.string().nullable(),
  /** "base64" when the body is not UTF-8 text; the function gets the decoded bytes. */
  bodyEncoding: z.literal("base64").optional(),
});
export type TaskInput = z.infer<typeof taskInput>;
