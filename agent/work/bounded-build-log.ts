import { MAX_LOG_LINE_CHARS } from "../../shared/protocol/messages.js";
import {
  BUILD_LOG_TAIL_LINES,
  BUILD_LOG_TEXT_BYTES,
  failureLine,
  textCutNote,
} from "../../shared/build-log.js";

/**
 * What one build streams live over the WebSocket, its final tail aside: enough for the record's head
 * (at most 500 lines of 256 KiB) and for followers to see progress, while every batch costs the
 * dispatcher a D1 read and write. The whole log goes up once, over HTTP, as the build ends.
 */
export const BUILD_LOG_STREAM_LINES = 10_000;
export const BUILD_LOG_STREAM_BYTES = 1024 * 1024;

const bytesOf = (line: string) => Buffer.byteLength(line) + 1;

/**
 * What an agent keeps of a build's output, however much it prints (a build may run 600 s): the
 * lines streamed live to the dispatcher (its first lines, while the stream budget lasts), a rolling
 * tail sent when the build ends, and the whole text up to its cap, counting what it cut.
 * Lines are numbered from 0 as printed; a number never sent is a cut line for the dispatcher.
 */
export class BoundedBuildLog {
  /** Lines printed so far. */
  private count = 0;
  private streamedBytes = 0;
  /** Lines from 0 to `streamedUpTo` went (or are queued to go) live; once a line does not, none after it does. */
  private streamedUpTo = 0;
  private streaming = true;
  /** Runs of consecutive lines waiting to be sent, each from its own first number. */
  private readonly pending: { first: number; lines: string[] }[] = [];
  /** The last lines printed and the number of the first of them. */
  private tail: string[] = [];
  private tailFirst = 0;
  private readonly kept: string[] = [];
  private keptBytes = 0;
  /** Lines printed past the text cap. */
  private textCut = 0;

  add(raw: string): void {
    const line = raw.slice(0, MAX_LOG_LINE_CHARS);
    const size = bytesOf(line);
    const n = this.count++;
    if (this.streaming && n < BUILD_LOG_STREAM_LINES && this.streamedBytes + size <= BUILD_LOG_STREAM_BYTES) {
      this.queue(n, [line]);
      this.streamedBytes += size;
      this.streamedUpTo = n + 1;
    } else this.streaming = false;
    this.tail.push(line);
    if (this.tail.length > BUILD_LOG_TAIL_LINES) {
      this.tail.shift();
      this.tailFirst++;
    }
    if (!this.textCut && this.keptBytes + size <= BUILD_LOG_TEXT_BYTES) {
      this.kept.push(line);
      this.keptBytes += size;
    } else this.textCut++;
  }

  /** The next batch to send: at most `max` lines, numbered from `first`; undefined when none wait. */
  take(max: number): { first: number; lines: string[] } | undefined {
    const run = this.pending[0];
    if (!run) return undefined;
    const batch = { first: run.first, lines: run.lines.splice(0, max) };
    run.first += batch.lines.length;
    if (!run.lines.length) this.pending.shift();
    return batch;
  }

  private queue(first: number, lines: string[]): void {
    const last = this.pending.at(-1);
    if (last && last.first + last.lines.length === first) last.lines.push(...lines);
    else this.pending.push({ first, lines });
  }

  /** The build ended: the last lines not streamed live are queued to be sent. */
  end(): void {
    const from = Math.max(this.streamedUpTo, this.tailFirst);
    if (from >= this.count) return;
    this.queue(from, this.tail.slice(from - this.tailFirst));
    this.streamedUpTo = this.count;
  }

  /** Lines printed so far. */
  get printed(): number {
    return this.count;
  }

  /** The whole log as uploaded: the kept lines, a note when the cap cut some, the failure reason last. */
  text(failure?: string): Buffer {
    const lines = [...this.kept];
    if (this.textCut) lines.push(textCutNote(this.textCut));
    if (failure !== undefined) lines.push(failureLine(failure));
    return Buffer.from(lines.length ? lines.join("\n") + "\n" : "");
  }
}
