import { SSE_KEEPALIVE, sseEvent } from "../lib/sse.js";
import { LIVE_LOG_FRAME_BYTES, MAX_LIVE_LOG_LINES } from "../../shared/protocol/messages.js";

/**
 * Events one follower may have waiting for its reader; past these, lines are dropped and counted.
 * A frame's lines are relayed in one go, before the reader can take any: one whole frame fits, so
 * a reader that keeps up never loses a line.
 */
export const FOLLOWER_BUFFER_EVENTS = MAX_LIVE_LOG_LINES + 100;
/**
 * Characters of events one follower may have waiting: a frame's lines (at most LIVE_LOG_FRAME_BYTES)
 * with their SSE framing, a tail's `{"taskId", "line"}` wrapping included (about 64 characters a line).
 */
export const FOLLOWER_BUFFER_CHARS = LIVE_LOG_FRAME_BYTES + MAX_LIVE_LOG_LINES * 64 + 32 * 1024;

const encoder = new TextEncoder();

/**
 * One follower's Server-Sent Events. Its reader pulls; what the dispatcher hands it meanwhile waits
 * in a small buffer, and once that is full further lines are dropped and counted, never waited
 * for: a reader that stalls costs the dispatcher a few KiB, not time. The count goes out as
 * `event: dropped {"lines": n}` before the next events it does get.
 */
export class FollowerStream {
  readonly body: ReadableStream<Uint8Array>;
  private queue: string[] = [];
  private chars = 0;
  private dropped = 0;
  private ending = false;
  private gone = false;
  private wake?: () => void;

  constructor(onGone: () => void) {
    this.body = new ReadableStream<Uint8Array>(
      {
        pull: async (controller) => {
          while (this.queue.length === 0 && this.dropped === 0 && !this.ending) await new Promise<void>((resolve) => (this.wake = resolve));
          this.sayDropped();
          const parts = this.queue;
          this.queue = [];
          this.chars = 0;
          if (parts.length) controller.enqueue(encoder.encode(parts.join("")));
          if (this.ending) {
            controller.close();
            this.leave(onGone);
          }
        },
        cancel: () => this.leave(onGone),
      },
      { highWaterMark: 0 },
    );
    // Headers go out with the first bytes of the body: a comment now, so that the reader knows at
    // once that it follows rather than when the first line comes.
    this.push(SSE_KEEPALIVE);
  }

  get open(): boolean {
    return !this.gone && !this.ending;
  }

  /** A line event: dropped (and counted) when the buffer is full. */
  line(event: string): void {
    if (!this.open) return;
    if (this.queue.length >= FOLLOWER_BUFFER_EVENTS || this.chars + event.length > FOLLOWER_BUFFER_CHARS) {
      this.dropped += 1;
      return;
    }
    this.push(event);
  }

  /** Lines that never reached the dispatcher for this follower: said as dropped, too. */
  lost(lines: number): void {
    if (this.open) this.dropped += lines;
  }

  /** An event the reader must get (a task's start or end): few per follower, never dropped. */
  notice(event: string): void {
    if (this.open) this.push(event);
  }

  /** A comment for an idle connection's sake; only when nothing else waits. */
  keepalive(): void {
    if (this.open && this.queue.length === 0) this.push(SSE_KEEPALIVE);
  }

  /** The last event; the stream closes once the reader has it. */
  end(event?: string): void {
    if (!this.open) return;
    if (event) this.push(event);
    this.ending = true;
    this.wake?.();
  }

  /** `dropped` counts the lines lost since the last event queued: said before anything queued after. */
  private sayDropped(): void {
    if (this.dropped === 0) return;
    const note = sseEvent("dropped", JSON.stringify({ lines: this.dropped }));
    this.dropped = 0;
    this.queue.push(note);
    this.chars += note.length;
  }

  private push(event: string): void {
    this.sayDropped();
    this.queue.push(event);
    this.chars += event.length;
    this.wake?.();
  }

  private leave(onGone: () => void): void {
    if (this.gone) return;
    this.gone = true;
    this.ending = true;
    this.queue = [];
    this.wake?.();
    onGone();
  }
}
