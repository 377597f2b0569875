/**
 * The dispatcher's queue in its own SQLite storage: every pending or running build and task lives
 * there until it ends, so an evicted or restarted dispatcher loses nothing. All calls are
 * synchronous, so a sequence of them with no await between commits together.
 *
 * A new row is written to storage once: assigned, when the pump that follows its enqueue gives it
 * to an agent at once (the usual case when slots are free), else waiting, by flush(). Both happen
 * before the enqueue's first await, so they commit together with the enqueue as before.
 *
 * Storage is written, not read: the queue is mirrored in memory (loaded when the object starts,
 * and again by reload()), because each storage statement costs far more than a map lookup and
 * the hot path asks the queue a dozen questions per task. Payloads (a task's input, up to 4 KiB inline)
 * stay in storage only and are read back by the assignment that sends them.
 *
 * Beside the map of every row, memory keeps the waiting rows in a FairQueue (fairness.ts: per
 * account, oldest first, accounts round-robin) and the assigned rows by id, so that neither a
 * pump nor a liveness round walks a backlog: what they read is bounded by the agents' slots.
 */
import { FairQueue } from "./fairness.js";
import { MAX_ATTEMPTS } from "./attempts.js";
import type { NewWork, WorkRow } from "./work-rows.js";

export type { NewWork, WorkKind, WorkRow } from "./work-rows.js";


const COLUMNS = "id, kind, account_id, function_id, lang, privileged, egress, cpu, mem, timeout_s, enqueued_at, node, assigned_at, deadline, attempts";

export class WorkQueue {
  /** Every row, waiting or assigned. */
  private rows = new Map<string, WorkRow>();
  private readonly fair = new FairQueue();
  /** The rows assigned to a node (node not null). */
  private readonly running = new Map<string, WorkRow>();
  private paused = new Set<string>();
  /** Ids of work put back after its last attempt, for exhausted(): so no pump scans the queue for them. */
  private spent = new Set<string>();
  /** Rows add() put in memory and not yet in storage, with their payload (see flush). */
  private readonly unsaved = new Map<string, string>();

  constructor(
    private readonly sql: SqlStorage,
    private readonly maxAttempts = MAX_ATTEMPTS,
  ) {
    sql.exec(`create table if not exists work (
      id text primary key, kind text not null, account_id text not null, function_id text not null,
      lang text not null, privileged integer not null, cpu real not null, mem integer not null,
      timeout_s integer not null, payload text not null, enqueued_at integer not null,
      node text, assigned_at integer, deadline integer, attempts integer not null default 0)`);
    // Queues created before attempts were counted, or before egress, gain the columns (SQLite has no "add column if not exists").
    for (const column of ["attempts integer not null default 0", "egress integer not null default 0"]) {
      try {
        sql.exec(`alter table work add column ${column}`);
      } catch {
        /* already there */
      }
    }
    sql.exec("create index if not exists work_node on work(node)");
    sql.exec("create index if not exists work_function on work(function_id)");
    // The waiting rows in FairQueue's lane order: a fresh instance rebuilds its lanes from one
    // ordered index scan, and only the waiting rows are in it.
    sql.exec("create index if not exists work_waiting on work(account_id, kind, function_id, enqueued_at, id) where node is null");
    sql.exec("create table if not exists paused (function_id text primary key)");
    this.reload();
  }

  /** Reads the queue from storage again. */
  reload(): void {
    this.flush();
    this.rows = new Map();
    this.fair.clear();
    this.running.clear();
    this.spent = new Set();
    const read = (query: string) => this.sql.exec<WorkRow & Record<string, SqlStorageValue>>(`select ${COLUMNS} from work ${query}`);
    for (const r of read("indexed by work_waiting where node is null order by account_id, kind, function_id, enqueued_at, id")) {
      const w = { ...r };
      this.rows.set(w.id, w);
      this.fair.add(w);
      if (w.attempts >= this.maxAttempts) this.spent.add(w.id);
    }
    for (const r of read("where node is not null")) {
      const w = { ...r };
      this.rows.set(w.id, w);
      this.running.set(w.id, w);
    }
    this.paused = new Set(this.sql.exec<{ function_id: string }>("select function_id from paused").toArray().map((r) => r.function_id));
  }

  /**
   * Idempotent: enqueuing the same id twice keeps the first. The row is stored by assign() or
   * flush(), one of which the caller must reach before its next await.
   */
  add(w: NewWork, now: number): void {
    if (this.rows.has(w.id)) return;
    const [privileged, egress] = [w.privileged ? 1 : 0, w.egress ? 1 : 0];
    this.unsaved.set(w.id, JSON.stringify(w.payload));
    const row: WorkRow = {
      id: w.id, kind: w.kind, account_id: w.accountId, function_id: w.functionId, lang: w.lang, privileged, egress, cpu: w.cpu, mem: w.mem,
      timeout_s: w.timeoutS, enqueued_at: now, node: null, assigned_at: null, deadline: null, attempts: 0,
    };
    this.rows.set(w.id, row);
    this.fair.add(row);
  }

  /** Stores the rows added and not yet assigned, as waiting. */
  flush(): void {
    for (const [id, payload] of this.unsaved) {
      const w = this.rows.get(id);
      if (w) this.insert(w, payload);
    }
    this.unsaved.clear();
  }

  private insert(w: WorkRow, payload: string): void {
    this.sql.exec(
      `insert or ignore into work (id, kind, account_id, function_id, lang, privileged, egress, cpu, mem, timeout_s, payload, enqueued_at, node, assigned_at, deadline, attempts)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      w.id, w.kind, w.account_id, w.function_id, w.lang, w.privileged, w.egress, w.cpu, w.mem, w.timeout_s, payload, w.enqueued_at, w.node, w.assigned_at, w.deadline, w.attempts,
    );
  }

  get(id: string): WorkRow | undefined {
    return this.rows.get(id);
  }

  has(id: string): boolean {
    return this.rows.has(id);
  }

  /** Every row, waiting (paused or not) or assigned, that `pick` keeps: for rare sweeps, not the hot path. */
  matching(pick: (w: WorkRow) => boolean): WorkRow[] {
    return [...this.rows.values()].filter(pick);
  }

  /**
   * Waiting work in the order to offer it: fairly between accounts, oldest first within one (see
   * FairQueue); a paused function's tasks are held back (its builds are not).
   */
  waiting(limit = 200, held?: (w: WorkRow) => boolean): Iterable<WorkRow> {
    const paused = (w: WorkRow) => w.kind === "task" && this.paused.has(w.function_id);
    return this.fair.order(held ? (w) => paused(w) || held(w) : paused, limit);
  }

  /** The rows assigned to nodes (bounded by the agents' slots). */
  runningRows(): Iterable<WorkRow> {
    return this.running.values();
  }

  /** Takes a row out of the queue, returning its payload (a failed attempt waiting for its retry, worker/retries/). */
  take(id: string): string | undefined {
    const [stored] = this.sql.exec<{ payload: string }>("delete from work where id = ? returning payload", id).toArray();
    const payload = stored?.payload ?? this.unsaved.get(id);
    this.forget(id);
    return payload;
  }

  /**
   * Stores the assignment and returns the payload to send; undefined (and the row forgotten) should
   * storage no longer hold it, which only an edit behind the queue's back can cause.
   */
  assign(id: string, node: string, now: number, deadline: number): string | undefined {
    const payload = this.unsaved.get(id);
    const fresh = this.rows.get(id);
    if (payload !== undefined && fresh) {
      // Added in this same synchronous step: stored once, already assigned.
      this.unsaved.delete(id);
      this.fair.delete(fresh);
      this.fair.served(fresh.account_id);
      Object.assign(fresh, { node, assigned_at: now, deadline, attempts: 1 });
      this.running.set(id, fresh);
      this.insert(fresh, payload);
      return payload;
    }
    const [stored] = this.sql
      .exec<{ payload: string; attempts: number }>("update work set node = ?, assigned_at = ?, deadline = ?, attempts = attempts + 1 where id = ? returning payload, attempts", node, now, deadline, id)
      .toArray();
    const w = this.rows.get(id);
    if (!stored) this.forget(id);
    else if (w) {
      this.fair.delete(w);
      this.fair.served(w.account_id);
      Object.assign(w, { node, assigned_at: now, deadline, attempts: stored.attempts });
      this.running.set(id, w);
    }
    return stored?.payload;
  }

  assignedTo(node: string): WorkRow[] {
    return [...this.running.values()].filter((w) => w.node === node);
  }

  countAssignedTo(node: string): number {
    let n = 0;
    for (const w of this.running.values()) if (w.node === node) n++;
    return n;
  }

  /** Puts an agent's work back in the queue (it disconnected or fell silent). */
  requeueNode(node: string): WorkRow[] {
    const rows = this.assignedTo(node);
    const before = rows.map((w) => ({ ...w }));
    if (rows.length) this.sql.exec("update work set node = null, assigned_at = null, deadline = null where node = ?", node);
    for (const w of rows) this.unassign(w);
    return before;
  }

  /** Puts back the work of every node not in `connected`; storage is touched only when there is some. */
  requeueAbsent(connected: string[]): number {
    const gone = new Set<string>();
    for (const w of this.running.values()) if (w.node !== null && !connected.includes(w.node)) gone.add(w.node);
    let n = 0;
    for (const node of gone) n += this.requeueNode(node).length;
    return n;
  }

  requeueOne(id: string): void {
    this.sql.exec("update work set node = null, assigned_at = null, deadline = null where id = ?", id);
    const w = this.rows.get(id);
    if (w?.node != null) this.unassign(w);
  }

  /**
   * An assignment that never left (its configuration could not be read while D1 was unreachable):
   * back to the queue, and the attempt it took not counted, so an outage cannot use a task's up.
   */
  handBack(id: string): void {
    this.sql.exec("update work set node = null, assigned_at = null, deadline = null, attempts = max(attempts - 1, 0) where id = ?", id);
    const w = this.rows.get(id);
    if (w?.node == null) return;
    w.attempts = Math.max(0, w.attempts - 1);
    this.unassign(w);
  }

  private unassign(w: WorkRow) {
    if (w.attempts >= this.maxAttempts) this.spent.add(w.id);
    w.node = null;
    w.assigned_at = null;
    w.deadline = null;
    this.running.delete(w.id);
    this.fair.add(w);
  }

  remove(id: string): void {
    this.sql.exec("delete from work where id = ?", id);
    this.forget(id);
  }

  /** Drops a row from memory, wherever it waits or runs. */
  private forget(id: string): void {
    this.unsaved.delete(id);
    const w = this.rows.get(id);
    if (!w) return;
    this.rows.delete(id);
    if (this.running.delete(id)) return;
    this.fair.delete(w);
  }

  removeFunction(functionId: string): WorkRow[] {
    this.setPaused(functionId, false);
    const gone = [...this.rows.values()].filter((w) => w.function_id === functionId);
    if (gone.length) this.sql.exec("delete from work where function_id = ?", functionId);
    for (const w of gone) this.forget(w.id);
    return gone;
  }

  setPaused(functionId: string, paused: boolean): void {
    if (paused === this.paused.has(functionId)) return;
    if (paused) {
      this.sql.exec("insert or ignore into paused (function_id) values (?)", functionId);
      this.paused.add(functionId);
    } else {
      this.sql.exec("delete from paused where function_id = ?", functionId);
      this.paused.delete(functionId);
    }
  }

  /** Waiting work that was assigned its last attempt and lost with its agent (each time); each row is returned once. */
  exhausted(): WorkRow[] {
    const out = [...this.spent].flatMap((id) => {
      const w = this.rows.get(id);
      return w && w.node === null ? [w] : [];
    });
    this.spent.clear();
    return out;
  }

  overdue(now: number): WorkRow[] {
    return [...this.running.values()].filter((w) => w.deadline !== null && w.deadline <= now);
  }

  earliestDeadline(): number | null {
    let min: number | null = null;
    for (const w of this.running.values()) if (w.deadline !== null && (min === null || w.deadline < min)) min = w.deadline;
    return min;
  }

  counts(): { waiting: number; running: number } {
    return { waiting: this.fair.size, running: this.running.size };
  }
}
