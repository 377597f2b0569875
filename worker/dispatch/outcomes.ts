import type { AgentMessage } from "../../shared/protocol/messages.js";

/**
 * Task outcomes the dispatcher has accepted but not yet written to D1, in its own SQLite storage.
 *
 * Accepting an outcome is synchronous (the task leaves the work queue and enters this log in one
 * storage transaction), so the agent's slot is free at once and a second report of the same task
 * finds nothing to accept. Writing to D1 happens after, in group commits: while one D1 batch is in
 * flight, the outcomes that arrive meanwhile wait and go together in the next. A failed write
 * keeps the rows here, and the dispatcher's alarm retries them; nothing is lost to an eviction.
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
}

/** One D1 batch carries at most this many outcomes, and about this many bytes of them. */
const MAX_ROWS = 64;
const MAX_BYTES = 1_500_000;

export class OutcomeLog {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(`create table if not exists outcome (
      task_id text primary key, at integer not null, size integer not null, body text not null)`);
  }

  /** Idempotent: the first outcome of a task is the one kept. */
  add(o: Outcome): void {
    const body = JSON.stringify(o);
    this.sql.exec("insert or ignore into outcome (task_id, at, size, body) values (?, ?, ?, ?)", o.taskId, o.at, body.length, body);
  }

  has(taskId: string): boolean {
    return this.sql.exec("select 1 from outcome where task_id = ?", taskId).toArray().length > 0;
  }

  /** The oldest outcomes, as many as one D1 batch should carry (always at least one). */
  next(): Outcome[] {
    const out: Outcome[] = [];
    let bytes = 0;
    for (const r of this.sql.exec<{ size: number; body: string }>("select size, body from outcome order by at, task_id limit ?", MAX_ROWS)) {
      if (out.length && bytes + r.size > MAX_BYTES) break;
      bytes += r.size;
      out.push(JSON.parse(r.body) as Outcome);
    }
    return out;
  }

  remove(taskIds: string[]): void {
    for (const id of taskIds) this.sql.exec("delete from outcome where task_id = ?", id);
  }

  count(): number {
    return this.sql.exec<{ n: number }>("select count(*) as n from outcome").one().n;
  }
}
