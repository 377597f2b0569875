import { z } from "zod";
import { recordId } from "./common.js";

export const MAX_RETRY_ATTEMPTS = 5;
export const MAX_BACKOFF_SECONDS = 3600;

/** A function's retry policy as stored and answered; also the whole body of its PUT (a PUT replaces). */
export const retrySet = z.strictObject({
  maxAttempts: z.int({ error: "must be an integer from 1 to 5" }).min(1, "must be from 1 to 5").max(MAX_RETRY_ATTEMPTS, "must be from 1 to 5"),
  backoffSeconds: z.int({ error: "must be an integer from 1 to 3600" }).min(1, "must be from 1 to 3600").max(MAX_BACKOFF_SECONDS, "must be from 1 to 3600"),
  deadLetterFunctionId: recordId.nullable(),
});
export type RetryPolicy = z.output<typeof retrySet>;

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 1, backoffSeconds: 10, deadLetterFunctionId: null };

/** The JSON body of the task a dead-letter function receives when another task's attempts ran out. */
export const deadLetterBody = z.object({
  taskId: z.string(),
  functionId: z.string(),
  status: z.int(),
  attempts: z.int(),
  input: z.object({
    method: z.string(),
    query: z.record(z.string(), z.union([z.string(), z.array(z.string())])),
    headers: z.record(z.string(), z.string()),
    contentType: z.string().nullable(),
    body: z.string().describe("base64"),
  }),
  logTail: z.string(),
});
export type DeadLetterBody = z.infer<typeof deadLetterBody>;
