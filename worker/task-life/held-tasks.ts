import type { TaskRow } from "../db/rows.js";
import { TASK_STATUS } from "../../shared/schemas/task.js";

/**
 * The tasks a dispatcher shard created, from their creation until D1 holds their final record
 * (issue 26: a task lives in its shard from creation to result). Creating a task is writing its row
 * here, in the shard's own SQLite, in the same synchronous step that queues it: that is what makes
 * it durable, and the API answers from it. D1 receives the rows later, in the group commit's
 * batches (group-commit.ts), with the outcomes.
 *
 * A row goes through three states: not yet in D1 (`in_d1` 0); in D1 but unfinished there (its
 * outcome, if any, still in the outcome log); gone, once the batch that recorded its outcome (or,
 * for a task cancelled here, its finished row) committed. Readers ask the shard before D1 for
 * exactly this reason: the shard's copy is the newest until it is gone.
 *
 * A task created *rowless* (TASK_ROWS = "shard": docs/dispatch.md, "Step 4") never has a row in D1:
 * it is recorded by its shard alone (its kept record and archive, its counts: record-counts.ts), and
 * a batch carries it only to settle its end (its outcome, or its cancellation here).
 *
 * A finished view (the created row with its outcome applied) is kept in memory only, and costs no
 * storage write: it is made from the row and the outcome log, both durable, so a fresh instance
 * makes it again from them on the task's first read (ShardLife.current). Storage is written, not
 * read, as for the queue: the rows are mirrored in memory.
 */
interface Held {
  row: TaskRow;
  inD1: boolean;
  size: number;
  rowless: boolean;
}

/** Whether a batch must carry the row: one D1 does not have yet, or a rowless one finished here (cancelled). */
const waitsForBatch = (h: Held) => !h.inD1 && (!h.rowless || h.row.finishedAt != null);

export class HeldTasks {
  /** In creation order: the oldest are flushed first. */
  private readonly rows = new Map<string, Held>();
  /** Rows whose outcome is accepted here but not yet in D1, with that outcome applied. */
  private readonly finishedViews = new Map<string, TaskRow>();
  private unrecordedCount = 0;

  constructor(private readonly sql: SqlStorage) {
    sql.exec(`create table if not exists held_task (
      id text primary key, account_id text not null, in_d1 integer not null default 0, row text not null)`);
    if (!sql.exec("select * from held_task limit 0").columnNames.includes("rowless")) sql.exec("alter table held_task add column rowless integer not null default 0");
    this.reload();
  }

  reload(): void {
    this.rows.clear();
    this.finishedViews.clear();
    this.unrecordedCount = 0;
    for (const r of this.sql.exec<{ id: string; in_d1: number; row: string; rowless: number }>("select id, in_d1, row, rowless from held_task order by rowid")) {
      const held: Held = { row: JSON.parse(r.row) as TaskRow, inD1: r.in_d1 === 1, size: r.row.length, rowless: r.rowless === 1 };
      this.rows.set(r.id, held);
      if (waitsForBatch(held)) this.unrecordedCount++;
    }
  }

  /** `rowless`: D1 gets no row of the task, ever (above). */
  add(row: TaskRow, rowless = false): void {
    const json = JSON.stringify(row);
    this.sql.exec("insert or ignore into held_task (id, account_id, row, rowless) values (?, ?, ?, ?)", row.id, row.accountId, json, rowless ? 1 : 0);
    if (this.rows.has(row.id)) return;
    const held: Held = { row, inD1: false, size: json.length, rowless };
    this.rows.set(row.id, held);
    if (waitsForBatch(held)) this.unrecordedCount++;
  }

  has(id: string): boolean {
    return this.rows.has(id);
  }

  /** Whether the task is held here rowless: D1 has no row of it to update or read back. */
  rowless(id: string): boolean {
    return this.rows.get(id)?.rowless === true;
  }

  /** The shard's newest version of the task: finished here, or as created (or cancelled). */
  get(id: string): TaskRow | undefined {
    return this.finishedViews.get(id) ?? this.rows.get(id)?.row;
  }

  /** The task as created here, or cancelled here: without its outcome (what metering reads: shard-metering/). */
  created(id: string): TaskRow | undefined {
    return this.rows.get(id)?.row;
  }

  /** Its outcome was accepted here: readers get the finished row before D1 has it. */
  finished(row: TaskRow): void {
    if (this.rows.has(row.id)) this.finishedViews.set(row.id, row);
  }

  /**
   * Tasks the function's deletion cancelled before they ran: they finish here as cancelled (410)
   * and reach D1 finished, with no outcome (the D1 cancellation could not see rows it did not have).
   */
  cancel(ids: string[], now: number): void {
    for (const id of ids) {
      const held = this.rows.get(id);
      if (!held || held.row.finishedAt != null) continue;
      // Written again, finished, whether or not D1 has it: the deletion's own cancellation may have
      // run before a batch in flight inserted the row unfinished (record-rows.ts finishes it then).
      const waited = waitsForBatch(held);
      held.row = { ...held.row, status: TASK_STATUS.cancelled, progress: 100, finishedAt: now };
      if (!waited) this.unrecordedCount++;
      held.inD1 = false;
      this.sql.exec("update held_task set row = ?, in_d1 = 0 where id = ?", JSON.stringify(held.row), id);
    }
  }

  /**
   * Rows D1 does not have yet, for one batch: those named first (the batch's outcomes need their
   * rows), then the oldest, within `maxBytes` of JSON (always at least the named ones).
   */
  unrecorded(first: string[], maxBytes: number): TaskRow[] {
    if (!this.unrecordedCount) return [];
    const out: TaskRow[] = [];
    const taken = new Set<string>();
    let bytes = 0;
    for (const id of first) {
      const held = this.rows.get(id);
      if (!held || !waitsForBatch(held) || taken.has(id)) continue;
      taken.add(id);
      out.push(held.row);
      bytes += held.size;
    }
    for (const [id, held] of this.rows) {
      if (!waitsForBatch(held) || taken.has(id)) continue;
      if (bytes + held.size > maxBytes) break;
      bytes += held.size;
      out.push(held.row);
    }
    return out;
  }

  /** The function's tasks held here: their end is the shard's to record, whatever D1 has of them. */
  ofFunction(functionId: string): string[] {
    const out: string[] = [];
    for (const [id, held] of this.rows) if (held.row.functionId === functionId) out.push(id);
    return out;
  }

  /** Whether rows wait for D1: the alarm retries a flush until none does. */
  get waiting(): number {
    return this.unrecordedCount;
  }

  /**
   * A batch committed: these rows (as it wrote them) are in D1 now, and these tasks' outcomes too. A task with its
   * outcome recorded, or finished here (cancelled) and recorded, is forgotten.
   */
  committed(recorded: TaskRow[], outcomesOf: string[]): void {
    const forget = new Set(outcomesOf.filter((id) => this.rows.has(id)));
    const mark: string[] = [];
    for (const written of recorded) {
      const id = written.id;
      const held = this.rows.get(id);
      // A row changed while its batch was in flight (cancelled) is written again by the next one.
      if (!held || !waitsForBatch(held) || held.row !== written) continue;
      this.unrecordedCount--;
      held.inD1 = true;
      if (held.row.finishedAt != null) forget.add(id);
      else mark.push(id);
    }
    if (mark.length) this.sql.exec("update held_task set in_d1 = 1 where id in (select value from json_each(?))", JSON.stringify(mark));
    if (!forget.size) return;
    const ids = [...forget];
    this.sql.exec("delete from held_task where id in (select value from json_each(?))", JSON.stringify(ids));
    for (const id of ids) {
      const held = this.rows.get(id);
      if (held && waitsForBatch(held)) this.unrecordedCount--;
      this.rows.delete(id);
      this.finishedViews.delete(id);
    }
  }

  /**
   * Every row held here, in creation order: as created (or cancelled here), its finished view if
   * its outcome was accepted, and whether D1 has the row yet (task-life/held-counts.ts reads these).
   */
  *entries(): Generator<{ row: TaskRow; view: TaskRow | undefined; inD1: boolean; rowless: boolean }> {
    for (const [id, held] of this.rows) yield { row: held.row, view: this.finishedViews.get(id), inD1: held.inD1, rowless: held.rowless };
  }

  /**
   * The account's tasks held here, newest first (ids sort by creation): what a list merges with D1's
   * page so that a caller's own new tasks are never missing from it.
   */
  ofAccount(q: { accountId: string; functionId?: string | undefined; before?: string | undefined; limit: number }): TaskRow[] {
    const out: TaskRow[] = [];
    for (const { row } of this.rows.values()) {
      if (row.accountId !== q.accountId) continue;
      if (q.functionId && row.functionId !== q.functionId) continue;
      if (q.before && row.id >= q.before) continue;
      out.push(this.finishedViews.get(row.id) ?? row);
    }
    out.sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0));
    return out.slice(0, q.limit);
  }
}
