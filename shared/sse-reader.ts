/** One Server-Sent Event as a reader sees it (comments skipped, data fields joined by "\n"). */
export interface SseEvent {
  event: string;
  data: string;
}

/** Reads Server-Sent Events off a response body as they come. */
export class SseReader {
  private buffer = "";
  private readonly reader: ReadableStreamDefaultReader<Uint8Array>;
  private readonly decoder = new TextDecoder();

  constructor(body: ReadableStream<Uint8Array>) {
    this.reader = body.getReader();
  }

  /** The next event, or null once the stream ended. */
  async next(): Promise<SseEvent | null> {
    for (;;) {
      const end = this.buffer.indexOf("\n\n");
      if (end >= 0) {
        const block = this.buffer.slice(0, end);
        this.buffer = this.buffer.slice(end + 2);
        const fields = block.split("\n").filter((l) => !l.startsWith(":"));
        if (!fields.length) continue;
        const event = fields.find((l) => l.startsWith("event: "))?.slice(7) ?? "message";
        return { event, data: fields.filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n") };
      }
      const { value, done } = await this.reader.read();
      if (done) return null;
      this.buffer += this.decoder.decode(value, { stream: true });
    }
  }

  async take(n: number): Promise<SseEvent[]> {
    const out: SseEvent[] = [];
    for (let i = 0; i < n; i++) {
      const e = await this.next();
      if (!e) throw new Error(`the stream ended after ${i} of ${n} events`);
      out.push(e);
    }
    return out;
  }

  /** Events until one matches (included). */
  async until(match: (e: SseEvent) => boolean): Promise<SseEvent[]> {
    const out: SseEvent[] = [];
    for (;;) {
      const e = await this.next();
      if (!e) throw new Error(`the stream ended before the awaited event; got ${JSON.stringify(out.slice(-5))}`);
      out.push(e);
      if (match(e)) return out;
    }
  }

  async rest(): Promise<SseEvent[]> {
    const out: SseEvent[] = [];
    for (let e = await this.next(); e; e = await this.next()) out.push(e);
    return out;
  }

  cancel(): Promise<void> {
    return this.reader.cancel();
  }
}
