import { StringDecoder } from "node:string_decoder";
import { PassThrough } from "node:stream";
import type Docker from "dockerode";

/** Written by every shim to stdout and stderr when an invocation ends (see docs/runtimes.md). */
const MARKER_START = "\x1eGCFAAS_END:";
const MARKER_END = "\x1e";
/** Invocation ids are 24 hex characters; the bound is what lets a marker be found in a bounded tail. */
const MAX_MARKER_ID_CHARS = 64;
const MAX_MARKER_CHARS = MARKER_START.length + MAX_MARKER_ID_CHARS + MARKER_END.length;
const MARKER = new RegExp(`^${MARKER_START}([^\\x1e\\n]{0,${MAX_MARKER_ID_CHARS}})${MARKER_END}$`);
/**
 * Characters kept of one line; the rest of a longer line is dropped and counted, so that the line
 * with its note stays within the protocol's 8192 characters per log line.
 */
export const MAX_LINE_CHARS = 8000;

export type StreamName = "stdout" | "stderr";

/**
 * Splits one output stream into lines. Text before an end marker is flushed as a line even when the
 * function did not end it with a newline, so it stays in the invocation that printed it.
 *
 * Memory and work are bounded whatever a function prints: each chunk is scanned once, a line keeps
 * its first MAX_LINE_CHARS characters plus a tail just long enough to hold an end marker, and the
 * characters between are only counted.
 */
export class LineSplitter {
  private readonly decoder = new StringDecoder("utf8");
  /** The current line's first characters (at most MAX_LINE_CHARS). */
  private head = "";
  /** The characters after `head` seen last (at most MAX_MARKER_CHARS): where a marker may be forming. */
  private tail = "";
  /** Characters of the current line between `head` and `tail`, dropped. */
  private dropped = 0;

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly onMarker: (id: string) => void = () => undefined,
  ) {}

  /** Characters held for the unfinished line: never more than MAX_LINE_CHARS plus a marker. */
  get bufferedChars(): number {
    return this.head.length + this.tail.length;
  }

  push(chunk: Buffer): void {
    const text = this.decoder.write(chunk);
    for (let start = 0; ; ) {
      const newline = text.indexOf("\n", start);
      this.append(newline === -1 ? text.slice(start) : text.slice(start, newline));
      if (newline === -1) return;
      this.finishLine(true);
      start = newline + 1;
    }
  }

  end(): void {
    this.append(this.decoder.end());
    if (this.head || this.tail || this.dropped) this.finishLine(false);
  }

  private append(piece: string): void {
    let rest = piece;
    if (this.tail.length === 0 && this.dropped === 0) {
      const room = MAX_LINE_CHARS - this.head.length;
      this.head += rest.slice(0, room);
      rest = rest.slice(room);
    }
    if (rest.length === 0) return;
    const window = rest.length >= MAX_MARKER_CHARS ? rest : this.tail + rest;
    this.dropped += this.tail.length + rest.length - Math.min(window.length, MAX_MARKER_CHARS);
    this.tail = window.slice(Math.max(0, window.length - MAX_MARKER_CHARS));
  }

  private finishLine(newline: boolean): void {
    const { head, tail, dropped } = this;
    this.head = "";
    this.tail = "";
    this.dropped = 0;
    // A marker is the last characters before a newline; with nothing dropped the line is head + tail.
    const end = dropped === 0 ? head + tail : tail;
    const markerAt = newline && end.endsWith(MARKER_END) ? end.lastIndexOf(MARKER_START) : -1;
    const marker = markerAt === -1 ? null : MARKER.exec(end.slice(markerAt));
    if (marker) {
      const before = dropped === 0 ? end.slice(0, markerAt) : null;
      if (before === null) this.onLine(truncated(head, dropped + markerAt));
      else if (before.length > 0) this.emit(before);
      this.onMarker(marker[1] ?? "");
      return;
    }
    if (dropped === 0) this.emit(newline ? end.replace(/\r$/, "") : end);
    else this.onLine(truncated(head, dropped + tail.length));
  }

  private emit(line: string): void {
    this.onLine(line.length > MAX_LINE_CHARS ? truncated(line.slice(0, MAX_LINE_CHARS), line.length - MAX_LINE_CHARS) : line);
  }
}

function truncated(head: string, more: number): string {
  return `${head} [line cut: ${more} more characters]`;
}

/**
 * Attaches to a created (not yet started) container and feeds its stdout and stderr to `onData`.
 * Attaching before start is what guarantees no early output is lost.
 */
export async function attachOutput(
  docker: Docker,
  container: Docker.Container,
  onData: (stream: StreamName, chunk: Buffer) => void,
  onEnd: () => void = () => undefined,
): Promise<NodeJS.ReadWriteStream> {
  const stream = await container.attach({ stream: true, stdout: true, stderr: true, hijack: true });
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  stdout.on("data", (chunk: Buffer) => onData("stdout", chunk));
  stderr.on("data", (chunk: Buffer) => onData("stderr", chunk));
  docker.modem.demuxStream(stream, stdout, stderr);
  stream.on("end", onEnd);
  stream.on("close", onEnd);
  stream.on("error", onEnd);
  return stream;
}
