import type { z } from "zod";
import { apiError, type ApiClient } from "./api-client.js";
import { CliError } from "./errors.js";
import { SseReader, type SseEvent } from "../shared/sse-reader.js";
import { droppedEvent } from "../shared/schemas/live-logs.js";
import { parseFrame } from "../shared/protocol/messages.js";

/** Opens a live log operation with `follow=1` and these options, e.g. `(api, o) => api.GET("/v1/task/{id}/log", { ...o, params: { path: { id }, query: { follow: "1" } } })`. */
export type LogStream = (api: ApiClient, o: { parseAs: "stream"; headers: Record<string, string> }) => Promise<{ data?: ReadableStream<Uint8Array> | null; error?: unknown; response: Response }>;

/**
 * Opens one of the service's live log streams (Server-Sent Events, api-decisions "Live logs") and
 * hands each event to `onEvent` until the stream ends or `onEvent` returns "stop". An error answer
 * (404, 429 limit_reached, ...) throws as every other call's does.
 */
export async function streamEvents(api: ApiClient, open: LogStream, onEvent: (e: SseEvent) => void | "stop", onOpen: () => void = () => undefined): Promise<void> {
  const { data, error, response } = await open(api, { parseAs: "stream", headers: { accept: "text/event-stream" } });
  if (!response.ok || !data) throw apiError(response, error);
  onOpen();
  const reader = new SseReader(data);
  for (let e = await reader.next(); e; e = await reader.next()) {
    if (onEvent(e) === "stop") {
      await reader.cancel();
      return;
    }
  }
}

/** An event's JSON data as its schema (shared/schemas/live-logs.ts) says; anything else is the service's fault. */
export function eventData<S extends z.ZodType>(schema: S, e: SseEvent): z.output<S> {
  const data = parseFrame(schema, e.data);
  if (data === undefined) throw new CliError("bad_response", `the log stream sent an \`${e.event}\` event the CLI does not understand: ${e.data.slice(0, 200)}`);
  return data;
}

/** The note for an `event: dropped`: what a reader too slow for the stream lost. */
export const droppedNote = (e: SseEvent): string => `(${eventData(droppedEvent, e).lines} lines dropped: this reader fell behind the log)`;
