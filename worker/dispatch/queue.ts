/**
 * The dispatcher's queue in its own SQLite storage: every pending or running build and task lives
 * here until it ends, so an evicted or restarted dispatcher loses nothing. All calls are
 * synchronous, so a sequence of them with no await between commits together.
 */
export type WorkKind = "task" | "build";

export interface WorkRow {
  id: string;
  kind: WorkKind;
  account_id: string;
  function_id: string;
  lang: string;
  privileged: number;
  cpu: number;
  mem: number;
  timeout_s: number;
  payload: string;
  enqueued_at: number;
  node: string | null;
  assigned_at: number | null;
  deadline: number | null;
  [key: string]: SqlStorageValue;
}

/** What assignment needs to know of waiting work. */
export type WaitingRow = Pick<WorkRow, "id" | "kind" | "account_id" | "function_id" | "lang" | "privileged" | "cpu" | "mem" | "timeout_s"> & Record<string, SqlStorageValue>;

export interface NewWork {
  id: string;
  kind: WorkKind;
  accountId: string;
  functionId: string;
  lang: string;
  privileged: boolean;
  cpu: number;
  mem: number;
  timeoutS: number;
  payload: unknown;
}

export class WorkQueue {
  constructor(private readonly sql: SqlStorage) {
    sql.exec(`create table if not exists work (
      id text primary key, kind text not null, account_id text not null, function_id text not null,
      lang text not null, privileged integer not null, cpu real not null, mem integer not null,
      timeout_s integer not null, payload text not null, enqueued_at integer not null,
      node text, assigned_at integer, deadline integer)`);
    sql.exec("create index if not exists work_node on work(node)");
    sql.exec("create index if not exists work_function on work(function_id)");
    sql.exec("create table if not exists paused (function_id text primary key)");
  }

  /** Idempotent: enqueuing the same id twice keeps the first. */
  add(w: NewWork, now: number): void {
    this.sql.exec(
      `insert or ignore into work (id, kind, account_id, function_id, lang, privileged, cpu, mem, timeout_s, payload, enqueued_at)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      w.id, w.kind, w.accountId, w.functionId, w.lang, w.privileged ? 1 : 0, w.cpu, w.mem, w.timeoutS, JSON.stringify(w.payload), now,
    );
  }

  has(id: string): boolean {
    return this.sql.exec("select 1 from work where id = ?", id).toArray().length > 0;
  }

  get(id: string): WorkRow | undefined {
    return this.sql.exec<WorkRow>("select * from work where id = ?", id).toArray()[0];
  }

  /**
   * Waiting work, oldest first; a paused function's tasks are held back (its builds are not).
   * Without the payload (a task's input), which only the work that gets assigned needs.
   */
  waiting(limit = 200): Iterable<WaitingRow> {
    // A cursor, not an array: the caller stops reading once every free slot is taken.
    return this.sql.exec<WaitingRow>(
      `select id, kind, account_id, function_id, lang, privileged, cpu, mem, timeout_s from work where node is null
       and (kind = 'build' or function_id not in (select function_id from paused))
       order by enqueued_at, id limit ?`,
      limit,
    );
  }

  /** Stores the assignment and returns the payload to send. */
  assign(id: string, node: string, now: number, deadline: number): string {
    return this.sql.exec<{ payload: string }>("update work set node = ?, assigned_at = ?, deadline = ? where id = ? returning payload", node, now, deadline, id).one().payload;
  }

  assignedTo(node: string): WorkRow[] {
    return this.sql.exec<WorkRow>("select * from work where node = ?", node).toArray();
  }

  countAssignedTo(node: string): number {
    return this.sql.exec<{ n: number }>("select count(*) as n from work where node = ?", node).one().n;
  }

  /** Puts an agent's work back in the queue (it disconnected or fell silent). */
  requeueNode(node: string): WorkRow[] {
    const rows = this.assignedTo(node);
    this.sql.exec("update work set node = null, assigned_at = null, deadline = null where node = ?", node);
    return rows;
  }

  /** Puts back the work of every node not in `connected`. */
  requeueAbsent(connected: string[]): number {
    const placeholders = connected.map(() => "?").join(", ");
    const where = connected.length ? `node is not null and node not in (${placeholders})` : "node is not null";
    return this.sql.exec(`update work set node = null, assigned_at = null, deadline = null where ${where}`, ...connected).rowsWritten;
  }

  requeueOne(id: string): void {
    this.sql.exec("update work set node = null, assigned_at = null, deadline = null where id = ?", id);
  }

  remove(id: string): void {
    this.sql.exec("delete from work where id = ?", id);
  }

  removeFunction(functionId: string): WorkRow[] {
    this.sql.exec("delete from paused where function_id = ?", functionId);
    return this.sql.exec<WorkRow>("delete from work where function_id = ? returning *", functionId).toArray();
  }

  setPaused(functionId: string, paused: boolean): void {
    if (paused) this.sql.exec("insert or ignore into paused (function_id) values (?)", functionId);
    else this.sql.exec("delete from paused where function_id = ?", functionId);
  }

  overdue(now: number): WorkRow[] {
    return this.sql.exec<WorkRow>("select * from work where deadline is not null and deadline <= ?", now).toArray();
  }

  earliestDeadline(): number | null {
    return this.sql.exec<{ d: number | null }>("select min(deadline) as d from work").one().d;
  }

  counts(): { waiting: number; running: number } {
    return this.sql
      .exec<{ waiting: number; running: number }>(
        "select coalesce(sum(node is null), 0) as waiting, coalesce(sum(node is not null), 0) as running from work",
      )
      .one();
  }
}
