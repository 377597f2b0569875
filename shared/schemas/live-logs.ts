import { z } from "zod";

/** `?follow=1` turns a log route into a Server-Sent Events stream (api-decisions "Live logs"). */
export const followParam = z
  .enum(["1", "true", "0", "false"], { error: "must be 1 (follow) or 0" })
  .optional()
  .transform((v) => v === "1" || v === "true");

/** Query of GET /v1/task/<id>/log: other parameters are ignored, as they were before `follow`. */
export const taskLogQuery = z.object({ follow: followParam });

/** Query of GET /v1/function/<id>/logs, which only streams. */
export const functionLogsQuery = z.strictObject({
  follow: followParam.refine((v) => v, { error: "must be 1: this route streams the function's logs live" }),
});

/** `event: end` of a followed task. */
export const logEndEvent = z.object({ status: z.int() });
/** `event: line` of a function's tail. */
export const tailLineEvent = z.object({ taskId: z.string(), line: z.string() });
/** `event: task` of a function's tail: a task started (or was running when the tail began), or ended. */
export const tailTaskEvent = z.object({ taskId: z.string(), state: z.enum(["running", "started", "ended"]), status: z.int().optional() });
/** `event: dropped`: lines this follower lost because it read too slowly. */
export const droppedEvent = z.object({ lines: z.int().min(1) });
