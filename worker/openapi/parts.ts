import { z } from "zod";
import { idempotencyKey, IDEMPOTENCY_HEADER, REPLAYED_HEADER } from "../../shared/schemas/idempotency.js";
import * as out from "../../shared/schemas/responses.js";
import type { Answer, HeaderParameter, RouteDoc } from "./describe.js";

type Body = NonNullable<RouteDoc["body"]>;

/** Pieces route documentation shares (describeRoute in each route module). */

/** The request headers of a call that issues a task (POST /v1/task/<id>, /gc/<id>). */
export const taskCallHeaders: HeaderParameter[] = [
  { name: "Prefer", description: "`wait=S` (at most 30): answer with the function's own response if it finishes within S seconds (RFC 7240); else 201 {id}.", schema: z.string() },
  {
    name: IDEMPOTENCY_HEADER,
    description: "Names the call: the same key with the same function (or endpoint) within 24 hours answers with the first call's task (`Idempotent-Replayed: true`) instead of making another; with a different body or query, 409 idempotency_conflict.",
    schema: idempotencyKey,
  },
];
/** Whether the answer names an earlier call's task (Idempotency-Key). */
export const replayedHeader = { [REPLAYED_HEADER]: "`true` when the answer is that of an earlier call with the same Idempotency-Key; absent otherwise." };

export const json = (schema: z.ZodType, required = true): Body => ({ schema, contentType: "application/json", required });
export const listFilterBody = (schema: z.ZodType): Body => ({ schema, contentType: "application/json", required: false, description: "Filters in a JSON body on GET (also accepted as query parameters; the body wins)." });
/** A task's input (worker/http/task-body.ts): any bytes with their Content-Type; a body that says JSON must be JSON. */
export const anyBody: Body = { contentType: "application/json", otherContentTypes: ["*/*"], required: false, description: "Any body, at most 10 MiB, handed to the function byte for byte with its Content-Type and the query parameters; a body that says it is JSON must be valid JSON." };
export const noContent: Answer = { status: 204, description: "Done; empty body." };
export const created = (what: string): Answer => ({ status: 201, schema: out.created, description: `The new ${what}'s id.` });
/** A new task's id, as the answer to a call that issues one (possibly under an Idempotency-Key). */
export const createdTask: Answer = { ...created("task"), optionalHeaders: replayedHeader };
/** Headers every result answer carries (services/task-results.ts), whatever the function answered. */
export const resultHeaders = {
  "Content-Security-Policy": "`sandbox`: a replayed page cannot act on the service's origin.",
  "X-Content-Type-Options": "`nosniff`: a browser reads the body as its Content-Type says.",
};
export const resultReplay: Answer = { status: 200, description: "The function's response replayed: its status code, Content-Type and body. 202 {status: 0, progress} while the task runs.", contentType: "*/*", headers: resultHeaders };
/** A synchronous call's answer (`Prefer: wait`): the function's own status, which may be any, documented here as 200. */
export const syncAnswer: Answer = {
  ...resultReplay,
  description: "With `Prefer: wait=S`, when the task finishes within S seconds: the function's own response (its status code, Content-Type and body).",
  headers: { ...resultHeaders, "Preference-Applied": "`wait`.", "X-Task-Id": "The task's id.", Location: "Where the result stays readable." },
  optionalHeaders: replayedHeader,
};
export const publicReplay: Answer = { ...resultReplay, description: "The function's response replayed: its status code, Content-Type and body. 404 result_not_ready (Retry-After, X-Task-Status) while the task runs, as the original service answers; an HTML page that refreshes itself for a browser." };
/** What a call that issues a task reads and answers (POST /v1/task/<id>, /gc/<id>): any body, a task id or, with Prefer: wait, the function's own response. */
export const taskCall: Pick<RouteDoc, "headers" | "body" | "ok" | "also"> = { headers: taskCallHeaders, body: anyBody, ok: createdTask, also: [syncAnswer] };
