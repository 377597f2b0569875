import type { Operation } from "./describe.js";

/** A path as a shape, whatever its parameters are called: `/v1/task/:id/log` and `/v1/task/{taskId}/log` alike. */
const shape = (path: string) => path.replace(/:\w+|\{\w+\}/g, "{}");

/**
 * Operations that can answer with Server-Sent Events (docs/logs.md) get a `text/event-stream`
 * content in their success answer, beside any JSON one, described by the operation's `events`.
 */
export function withEventStreams<P extends Record<string, Record<string, unknown>>>(paths: P, ops: Operation[]): P {
  for (const op of ops) {
    if (!op.events) continue;
    const [, item] = Object.entries(paths).find(([p]) => shape(p) === shape(op.path)) ?? [];
    const answer = (item?.[op.method] as { responses?: Record<string, { content?: Record<string, unknown> }> } | undefined)?.responses?.[op.ok.status];
    if (answer) answer.content = { ...answer.content, "text/event-stream": { schema: { type: "string", description: op.events } } };
  }
  return paths;
}
