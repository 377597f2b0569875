import type { AgentMessage } from "../../shared/protocol/messages.js";
import { MAX_STATEMENT_JSON_BYTES } from "../task-life/record-rows.js";

/**
 * Task outcomes the dispatcher has accepted but not yet written to D1, in its own SQLite storage.
 *
 * Accepting an outcome is synchronous (the task leaves the work queue and enters this log in one
 * storage transaction), so the agent's slot is free at once and a second report of the same task
 * finds nothing to accept. Writing to D1 happens after, in group commits: while one D1 batch is in
 * flight, the outcomes that arrive meanwhile wait and go together in the next. A failed write
 * keeps the rows here, and the dispatcher's alarm retries them; nothing is lost to an eviction.
 *
 * Storage is for durability only: the log is mirrored in memory (loaded once when the object
 * starts), so writing a batch reads and parses nothing back.
 */
export type TaskDone = Extract<AgentMessage, { type: "task.done" }>;

export interface Outcome {
  taskId: string;
  accountId: string;
  functionId: string;
  /** When the dispatcher accepted it: the task's finishing time. */
  at: number;
  /** The assignment that produced it, written with it (the separate assigned mark may not have been). */
  node: string | null;
  assignedAt: number | null;
  rttMs: number;
  /** The agent's report, or null for the dispatcher's own verdict that the task ran out of time. */
  report: TaskDone | null;
  /** A task that was retried (worker/retries/): its attempts, and the earlier attempts' log lines. */
  attempts?: number;
  earlier?: string[];
}

/** One D1 batch carries at most this many outcomes, and about this many bytes of them. */
const MAX_ROWS = 64;
const MAX_BYTES = MAX_STATEMENT_JSON_BYTES;

export class OutcomeLog {
  /** Accepted outcomes in acceptance order, with their stored size. */
  private readonly pending = new Map<string, { outcome: Outcome; size: number }>();

  constructor(private readonly sql: SqlStorage) {
    sql.exec(`create table if not exists outcome (
      task_id text primary key, at integer not null, size integer not null, body text not null)`);
    this.reload();
  }

  /** Reads the log from storage again (see Dispatcher.resync). */
  reload(): void {
    this.pending.clear();
    for (const r of this.sql.exec<{ task_id: string; size: number; body: string }>("select task_id, size, body from outcome order by at, task_id"))
      this.pending.set(r.task_id, { outcome: JSON.parse(r.body) as Outcome, size: r.size });
  }

  /**
   * Idempotent: the first outcome of a task is the one kept. `reportJson` is the agent's frame as
   * it arrived (already validated as `o.report`): stored as is rather than serialized again.
   */
  add(o: Outcome, reportJson?: string): void {
    if (this.pending.has(o.taskId)) return;
    const { report, ...meta } = o;
    const body = reportJson && report ? `${JSON.stringify(meta).slice(0, -1)},"report":${reportJson}}` : JSON.stringify(o);
    this.sql.exec("insert or ignore into outcome (task_id, at, size, body) values (?, ?, ?, ?)", o.taskId, o.at, body.length, body);
    this.pending.set(o.taskId, { outcome: o, size: body.length });
  }

  has(taskId: string): boolean {
    return this.pending.has(taskId);
  }

  get(taskId: string): Outcome | undefined {
    return this.pending.get(taskId)?.outcome;
  }

  accountOf(taskId: string): string | undefined {
    return this.pending.get(taskId)?.outcome.accountId;
  }

  /** The oldest outcomes, as many as one D1 batch should carry (always at least one). */
  next(): Outcome[] {
    const out: Outcome[] = [];
    let bytes = 0;
    for (const { outcome, size } of this.pending.values()) {
      if (out.length >= MAX_ROWS || (out.length && bytes + size > MAX_BYTES)) break;
      bytes += size;
      out.push(outcome);
    }
    return out;
  }

  /** Every accepted outcome not yet in D1, oldest first: what usage adds until D1 has them (task-life/held-counts.ts). */
  all(): Outcome[] {
    return [...this.pending.values()].map((p) => p.outcome);
  }

  remove(taskIds: string[]): void {
    // One statement a batch: the ids as a JSON array parameter (no limit on their number).
    this.sql.exec("delete from outcome where task_id in (select value from json_each(?))", JSON.stringify(taskIds));
    for (const id of taskIds) this.pending.delete(id);
  }

  count(): number {
    return this.pending.size;
  }
}
