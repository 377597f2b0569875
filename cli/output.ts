import { runnable } from "./cli-name.js";
import type { Writable } from "node:stream";

export interface Column<T> {
  title: string;
  value: (row: T) => string;
}

/**
 * Where commands print. Results go to stdout (JSON with `--json`, else text); notes and progress go
 * to stderr, so `gcfaas ... --json | jq` always sees exactly one JSON document.
 */
export class Output {
  constructor(
    readonly json: boolean,
    readonly stdout: Writable & { isTTY?: boolean },
    readonly stderr: Writable & { isTTY?: boolean },
  ) {}

  /** Prints `data` as JSON when `--json` was given, else runs `human`. */
  result(data: unknown, human: () => void): void {
    if (this.json) this.printJson(data);
    else human();
  }

  printJson(data: unknown): void {
    this.stdout.write(`${JSON.stringify(data ?? null, null, 2)}\n`);
  }

  /** A line of the human result (stdout). */
  line(text = ""): void {
    this.stdout.write(`${text}\n`);
  }

  /** A note on stderr; kept out of `--json` runs unless `always`. */
  note(text: string, always = false): void {
    if (!this.json || always) this.stderr.write(`${runnable(text)}\n`);
  }

  table<T>(rows: readonly T[], columns: readonly Column<T>[], empty = "(none)"): void {
    if (rows.length === 0) {
      this.line(empty);
      return;
    }
    const cells = [columns.map((c) => c.title), ...rows.map((r) => columns.map((c) => oneLine(c.value(r))))];
    const widths = columns.map((_, i) => Math.max(...cells.map((row) => row[i]!.length)));
    for (const row of cells) this.line(row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join("  ").trimEnd());
  }

  /** `key: value` lines with the keys aligned. */
  fields(pairs: ReadonlyArray<readonly [string, string]>): void {
    const width = Math.max(0, ...pairs.map(([k]) => k.length)) + 1;
    for (const [k, v] of pairs) this.line(`${`${k}:`.padEnd(width)} ${v}`);
  }
}

function oneLine(s: string): string {
  return s.replace(/[\r\n\t]+/g, " ");
}

/** A Date from the API's two time shapes: Unix seconds as a string, or ISO 8601. */
export function parseTime(v: unknown): Date | undefined {
  if (v === null || v === undefined || v === "") return undefined;
  if (typeof v === "number" || (typeof v === "string" && /^\d+$/.test(v))) return new Date(Number(v) * 1000);
  if (typeof v !== "string") return undefined;
  const d = new Date(v);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

/** `2026-11-21 05:14:00 UTC`, or `-`. */
export function fmtTime(v: unknown): string {
  const d = parseTime(v);
  return d ? `${d.toISOString().slice(0, 19).replace("T", " ")} UTC` : "-";
}

/** Age for tables: `45s`, `12m`, `3h`, `2d`. */
export function fmtAge(v: unknown, now = Date.now()): string {
  const d = parseTime(v);
  if (!d) return "-";
  const s = Math.max(0, Math.round((now - d.getTime()) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m`;
  if (s < 86400) return `${Math.floor(s / 3600)}h`;
  return `${Math.floor(s / 86400)}d`;
}

export function fmtTags(tags: unknown): string {
  if (!Array.isArray(tags) || tags.length === 0) return "-";
  return tags.map((t) => (t && typeof t === "object" && "name" in t ? String((t as { name: unknown }).name) : String(t))).join(", ");
}

export function yesNo(b: unknown): string {
  return b ? "yes" : "no";
}

/** A task's status for people: `pending`, `running 40%`, or the HTTP status with its meaning. */
export function fmtTaskStatus(status: number, progress: number): string {
  if (status === 0) return progress > 0 ? `running ${progress}%` : "pending";
  const meaning: Record<number, string> = { 200: "ok", 410: "cancelled", 500: "crashed", 504: "timed out" };
  return meaning[status] ? `${status} ${meaning[status]}` : String(status);
}

/**
 * A one-line status display on a terminal (spinner, redrawn in place) that lets other lines print
 * above it; off a terminal, only changes are printed, one line each.
 */
export class Progress {
  private frame = 0;
  private shown = "";
  private lastPlain = "";
  private timer: NodeJS.Timeout | undefined;
  private status = "";
  private readonly started = Date.now();

  constructor(private readonly stream: Writable & { isTTY?: boolean }, private readonly enabled: boolean) {}

  private get tty(): boolean {
    return Boolean(this.stream.isTTY);
  }

  start(): void {
    if (this.enabled && this.tty) this.timer = setInterval(() => this.redraw(), 120);
  }

  set(status: string): void {
    this.status = status;
    if (!this.enabled) return;
    if (this.tty) this.redraw();
    else if (status !== this.lastPlain) {
      this.lastPlain = status;
      this.stream.write(`${status}\n`);
    }
  }

  /** A line printed above the status line. */
  log(line: string): void {
    if (!this.enabled) return;
    this.clear();
    this.stream.write(`  ${line}\n`);
    if (this.tty) this.redraw();
  }

  stop(final?: string): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    if (!this.enabled) return;
    this.clear();
    if (final) this.stream.write(`${final}\n`);
  }

  elapsed(): string {
    return `${((Date.now() - this.started) / 1000).toFixed(1)}s`;
  }

  private clear(): void {
    if (this.tty && this.shown) this.stream.write("\r\x1b[K");
    this.shown = "";
  }

  private redraw(): void {
    if (!this.status) return;
    const frames = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏";
    this.frame = (this.frame + 1) % frames.length;
    this.shown = `${frames[this.frame]} ${this.status} (${Math.round((Date.now() - this.started) / 1000)}s)`;
    this.stream.write(`\r\x1b[K${this.shown}`);
  }
}
