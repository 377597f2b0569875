import { StringDecoder } from "node:string_decoder";
import { PassThrough } from "node:stream";
import type Docker from "dockerode";

/** Written by every shim to stdout and stderr when an invocation ends (see docs/runtimes.md). */
export const END_MARKER = /\x1eGCFAAS_END:([^\x1e\n]*)\x1e\n/;
const MAX_LINE_CHARS = 16 * 1024;

export type StreamName = "stdout" | "stderr";

/**
 * Splits one output stream into lines. Text before an end marker is flushed as a line even when the
 * function did not end it with a newline, so it stays in the invocation that printed it.
 */
export class LineSplitter {
  private readonly decoder = new StringDecoder("utf8");
  private buffer = "";

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly onMarker: (id: string) => void = () => undefined,
  ) {}

  push(chunk: Buffer): void {
    this.buffer += this.decoder.write(chunk);
    for (;;) {
      const marker = END_MARKER.exec(this.buffer);
      const newline = this.buffer.indexOf("\n");
      if (marker && (newline === -1 || marker.index <= newline)) {
        if (marker.index > 0) this.onLine(this.buffer.slice(0, marker.index));
        this.buffer = this.buffer.slice(marker.index + marker[0].length);
        this.onMarker(marker[1] ?? "");
      } else if (newline !== -1) {
        this.onLine(this.buffer.slice(0, newline).replace(/\r$/, ""));
        this.buffer = this.buffer.slice(newline + 1);
      } else {
        break;
      }
    }
    // A process printing without newlines must not grow memory without bound.
    while (this.buffer.length > MAX_LINE_CHARS && !this.buffer.includes("\x1e")) {
      this.onLine(this.buffer.slice(0, MAX_LINE_CHARS));
      this.buffer = this.buffer.slice(MAX_LINE_CHARS);
    }
  }

  end(): void {
    this.buffer += this.decoder.end();
    if (this.buffer.length > 0) this.onLine(this.buffer);
    this.buffer = "";
  }
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
