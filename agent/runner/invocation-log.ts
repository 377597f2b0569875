import { LineSplitter, type StreamName } from "../docker/output.js";
import type { LogCut } from "../../shared/protocol/messages.js";

/**
 * Output bytes (UTF-8) one container's log holds until its call takes them. JSON escaping makes a
 * byte at most 6 (a control character as \u00XX), so 2 MiB of kept output plus 10,000 lines'
 * quotes and commas always fit the 16 MiB a log upload may carry (MAX_LOG_UPLOAD_BYTES): what the
 * agent keeps reaches the dispatcher whole. 16 containers at once hold at most 32 MiB.
 */
export const MAX_CALL_LOG_BYTES = 2 * 1024 * 1024;

export interface LogBounds {
  /** Lines a call's log keeps, its cut note included. */
  maxLines: number;
  /** Output bytes (UTF-8) held at once; see MAX_CALL_LOG_BYTES. */
  maxBytes: number;
}

/** One call's log: its lines, and what was cut from it (also said in its last line). */
export interface CallLog {
  lines: string[];
  cut: LogCut;
}

interface Line {
  seq: number;
  /** UTF-8, not a string: its size is exactly what it costs, and it holds no larger chunk alive. */
  bytes: Buffer;
}

const noCut = (): LogCut => ({ lines: 0, bytes: 0 });

/**
 * A running call's output as it is printed, for a live follower (agent/work/live-log.ts). Lines
 * are the ones the log keeps, numbered from 0 in the order kept: the same lines, in the same order,
 * as the call's finished log. Lines past the log's bounds are not kept, so not watched either.
 */
export interface LineFeed {
  /** The lines held so far; from now on each kept line goes to `onLine`, and the first cut line to `onCut`. */
  watch(onLine: (line: string) => void, onCut: () => void): string[];
  unwatch(): void;
}

interface Watcher {
  onLine: (line: string) => void;
  onCut: () => void;
}

/**
 * Cuts a warm container's stdout and stderr into per-invocation logs. One container serves one call
 * at a time, and its shim writes an end marker (with the call's id) to both streams after the handler
 * returns, so everything before the markers belongs to that call; output printed between calls
 * (for example while the handler module loads) goes to the next call.
 *
 * Memory is bounded while the output is read, not after: lines past `maxLines` or past `maxBytes`
 * held are counted (lines and bytes) and let go at once; the counts end the call's log as a note.
 */
export class InvocationLog implements LineFeed {
  private seq = 0;
  /** Set only while someone follows the running call: the hot path pays one null check a line. */
  private watcher: Watcher | null = null;
  private readonly current: Record<StreamName, Line[]> = { stdout: [], stderr: [] };
  private readonly finished = new Map<string, Partial<Record<StreamName, Line[]>>>();
  private readonly waiters = new Map<string, () => void>();
  private heldLines = 0;
  private heldBytes = 0;
  private mostBytes = 0;
  private cut = noCut();
  readonly splitters: Record<StreamName, LineSplitter>;

  constructor(private readonly bounds: LogBounds) {
    this.splitters = {
      stdout: this.splitterFor("stdout"),
      stderr: this.splitterFor("stderr"),
    };
  }

  /** Output bytes held now, in lines not yet taken by a call. */
  get retainedBytes(): number {
    return this.heldBytes;
  }

  /** The most output bytes ever held at once by this log. */
  get peakRetainedBytes(): number {
    return this.mostBytes;
  }

  push(stream: StreamName, chunk: Buffer): void {
    this.splitters[stream].push(chunk);
  }

  watch(onLine: (line: string) => void, onCut: () => void): string[] {
    this.watcher = { onLine, onCut };
    if (this.cut.lines > 0) onCut();
    return [...this.current.stdout, ...this.current.stderr].sort((a, b) => a.seq - b.seq).map((l) => l.bytes.toString("utf8"));
  }

  unwatch(): void {
    this.watcher = null;
  }

  /** Waits until both streams carried the end marker of `id` (or `timeoutMs`), then returns its log. */
  async take(id: string, timeoutMs: number): Promise<CallLog> {
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
    return this.render([...(parts.stdout ?? this.drain("stdout")), ...(parts.stderr ?? this.drain("stderr")), ...this.takeStrayParts()]);
  }

  /** Everything printed since the last completed call, for calls that never completed. */
  takeUnfinished(): CallLog {
    return this.render([...this.drain("stdout"), ...this.drain("stderr"), ...this.takeStrayParts()]);
  }

  /**
   * Lines filed under markers no call waits for (a function can print a marker of its own, and a
   * marker can trail its call's grace time): they belong to the call that takes the log now, and
   * must not stay held, or they would count against every later call's bound.
   */
  private takeStrayParts(): Line[] {
    const lines = [...this.finished.values()].flatMap((p) => [...(p.stdout ?? []), ...(p.stderr ?? [])]);
    this.finished.clear();
    return lines;
  }

  private render(lines: Line[]): CallLog {
    lines.sort((a, b) => a.seq - b.seq);
    for (const line of lines) this.release(line);
    const cut = this.cut;
    this.cut = noCut();
    if (cut.lines > 0 && lines.length >= this.bounds.maxLines) {
      // The note takes the last line's place, so that the log stays within maxLines.
      const last = lines.pop()!;
      cut.lines += 1;
      cut.bytes += last.bytes.length;
    }
    const texts = lines.map((l) => l.bytes.toString("utf8"));
    if (cut.lines > 0) texts.push(cutNote(cut, this.bounds));
    return { lines: texts, cut };
  }

  private drain(stream: StreamName): Line[] {
    const lines = this.current[stream];
    this.current[stream] = [];
    return lines;
  }

  private keep(stream: StreamName, text: string): void {
    const size = Buffer.byteLength(text);
    if (this.heldLines >= this.bounds.maxLines || this.heldBytes + size > this.bounds.maxBytes) {
      if (this.cut.lines === 0) this.watcher?.onCut();
      this.cut.lines += 1;
      this.cut.bytes += size;
      return;
    }
    this.watcher?.onLine(text);
    this.current[stream].push({ seq: this.seq++, bytes: Buffer.from(text, "utf8") });
    this.heldLines += 1;
    this.heldBytes += size;
    this.mostBytes = Math.max(this.mostBytes, this.heldBytes);
  }

  private release(line: Line): void {
    this.heldLines -= 1;
    this.heldBytes -= line.bytes.length;
  }

  private isComplete(id: string): boolean {
    const parts = this.finished.get(id);
    return parts?.stdout !== undefined && parts.stderr !== undefined;
  }

  private splitterFor(stream: StreamName): LineSplitter {
    return new LineSplitter(
      (text) => this.keep(stream, text),
      (id) => {
        const parts = this.finished.get(id) ?? {};
        parts[stream] = this.drain(stream);
        this.finished.set(id, parts);
        if (this.isComplete(id)) this.waiters.get(id)?.();
      },
    );
  }
}

/** The last line of a call's log that lost output. */
export function cutNote(cut: LogCut, bounds: LogBounds): string {
  return `[runtime] … ${cut.lines} lines (${cut.bytes} bytes) cut … (a call's log keeps at most ${bounds.maxLines} lines and ${bounds.maxBytes} bytes)`;
}
