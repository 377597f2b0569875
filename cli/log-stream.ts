import { errorFromResponse, type ApiClient } from "./api-client.js";
import { SseReader, type SseEvent } from "../shared/sse-reader.js";

/**
 * Opens one of the service's live log streams (Server-Sent Events, api-decisions "Live logs") and
 * hands each event to `onEvent` until the stream ends or `onEvent` returns "stop". An error answer
 * (404, 429 limit_reached, ...) throws as every other call's does.
 */
export async function streamEvents(api: ApiClient, path: string, onEvent: (e: SseEvent) => void | "stop", onOpen: () => void = () => undefined): Promise<void> {
  const res = await api.raw("GET", path, { query: { follow: 1 }, headers: { accept: "text/event-stream" } });
  if (!res.ok || !res.body) throw errorFromResponse(res, await res.text());
  onOpen();
  const reader = new SseReader(res.body);
  for (let e = await reader.next(); e; e = await reader.next()) {
    if (onEvent(e) === "stop") {
      await reader.cancel();
      return;
    }
  }
}

/** The note for an `event: dropped`: what a reader too slow for the stream lost. */
export const droppedNote = (data: string): string => `(${(JSON.parse(data) as { lines: number }).lines} lines dropped: this reader fell behind the log)`;
