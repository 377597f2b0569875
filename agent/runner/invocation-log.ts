import { LineSplitter, type StreamName } from "../docker/output.js";

interface Line {
  seq: number;
  text: string;
}

/**
 * Cuts a warm container's stdout and stderr into per-invocation logs. One container serves one call
 * at a time, and its shim writes an end marker (with the call's id) to both streams after the handler
 * returns, so everything before the markers belongs to that call; output printed between calls
 * (for example while the handler module loads) goes to the next call.
 */
export class InvocationLog {
  private seq = 0;
  private readonly current: Record<StreamName, Line[]> = { stdout: [], stderr: [] };
  private readonly finished = new Map<string, Partial<Record<StreamName, Line[]>>>();
  private readonly waiters = new Map<string, () => void>();
  private dropped = 0;
  readonly splitters: Record<StreamName, LineSplitter>;

  constructor(private readonly maxLines: number) {
    this.splitters = {
      stdout: this.splitterFor("stdout"),
      stderr: this.splitterFor("stderr"),
    };
  }

  push(stream: StreamName, chunk: Buffer): void {
    this.splitters[stream].push(chunk);
  }

  /** Waits until both streams carried the end marker of `id` (or `timeoutMs`), then returns its lines. */
  async take(id: string, timeoutMs: number): Promise<string[]> {
    if (!this.isComplete(id)) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        this.waiters.set(id, () => {
          clearTimeout(timer);
          resolve();
        });
      });
      this.waiters.delete(id);
    }
    const parts = this.finished.get(id) ?? {};
    this.finished.delete(id);
    // A stream whose marker never came (the process died) contributes what it printed so far.
    const lines = [...(parts.stdout ?? this.drain("stdout")), ...(parts.stderr ?? this.drain("stderr"))];
    return this.render(lines);
  }

  /** Everything printed since the last completed call, for calls that never completed. */
  takeUnfinished(): string[] {
    return this.render([...this.drain("stdout"), ...this.drain("stderr")]);
  }

  private render(lines: Line[]): string[] {
    const texts = lines.sort((a, b) => a.seq - b.seq).map((l) => l.text);
    if (this.dropped > 0) texts.push(`[runtime] ${this.dropped} more log lines dropped (limit ${this.maxLines} per call)`);
    this.dropped = 0;
    return texts;
  }

  private drain(stream: StreamName): Line[] {
    const lines = this.current[stream];
    this.current[stream] = [];
    return lines;
  }

  private isComplete(id: string): boolean {
    const parts = this.finished.get(id);
    return parts?.stdout !== undefined && parts.stderr !== undefined;
  }

  private splitterFor(stream: StreamName): LineSplitter {
    return new LineSplitter(
      (text) => {
        if (this.current.stdout.length + this.current.stderr.length >= this.maxLines) this.dropped += 1;
        else this.current[stream].push({ seq: this.seq++, text });
      },
      (id) => {
        const parts = this.finished.get(id) ?? {};
        parts[stream] = this.drain(stream);
        this.finished.set(id, parts);
        if (this.isComplete(id)) this.waiters.get(id)?.();
      },
    );
  }
}
