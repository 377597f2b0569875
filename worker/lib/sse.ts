/**
 * Server-Sent Events, as `text/event-stream` frames them. A data field cannot hold a line break:
 * a line with carriage returns goes as several `data:` fields, which a reader joins with "\n".
 */
export function sseEvent(event: string, data: string): string {
  return `event: ${event}\n${data.split(/\r\n|\r|\n/).map((d) => `data: ${d}\n`).join("")}\n`;
}

/** A comment line: keeps an idle stream's connection open through proxies, and readers ignore it. */
export const SSE_KEEPALIVE = ": keepalive\n\n";

export const SSE_HEADERS = {
  "content-type": "text/event-stream; charset=utf-8",
  "cache-control": "no-cache, no-transform",
  // Proxies that buffer responses (nginx) would hold the lines back.
  "x-accel-buffering": "no",
} as const;
