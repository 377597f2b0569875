import type { RetryPolicy } from "../../shared/schemas/retry.js";
import type { NewWork } from "../dispatch/queue.js";
import { earlierAttempt } from "./attempt-log.js";
import type { TaskDone } from "../dispatch/outcomes.js";

/**
 * A retryable task's state on its dispatcher, from its enqueue to its final outcome, in the
 * object's storage (mirrored in memory), so that a waiting retry survives an eviction or a restart:
 * - `attempt`: the attempt queued or running now (1 first);
 * - `due` and `work`: while it waits for its backoff, when it goes back and the queue row it left
 *   (with its payload), since a waiting task is not in the queue and cannot hold a slot or a lane;
 * - `earlier`: the lines of the attempts before, each under its marker;
 * - `recorded`: whether D1 has the last failed attempt (its count and its invocation);
 * - `logKey`: an attempt's log uploaded to R2, still to be copied before the next one replaces it.
 */
export interface Run {
  taskId: string;
  accountId: string;
  functionId: string;
  policy: RetryPolicy;
  attempt: number;
  due: number | null;
  work: NewWork | null;
  earlier: string[];
  recorded: boolean;
  logKey: string | null;
  /** The failed attempt D1 is to record: its finish and duration (for usage). */
  failedAt: number | null;
  durationMs: number | null;
  /** The GC-Storage change the failed attempt made, for D1 (the dispatcher's copy has it already). */
  storage?: TaskDone["storage"];
}

export class RetryRuns {
  private runs = new Map<string, Run>();

  constructor(private readonly sql: SqlStorage) {
    sql.exec("create table if not exists retry_run (task_id text primary key, run text not null)");
    this.reload();
  }

  reload(): void {
    this.runs = new Map(this.sql.exec<{ task_id: string; run: string }>("select task_id, run from retry_run").toArray().map((r) => [r.task_id, JSON.parse(r.run) as Run]));
  }

  get size(): number {
    return this.runs.size;
  }

  get(taskId: string): Run | undefined {
    return this.runs.get(taskId);
  }

  /** Idempotent: a task enqueued again (released after its backoff, or re-sent) keeps its run. */
  track(w: NewWork, policy: RetryPolicy): void {
    if (this.runs.has(w.id)) return;
    this.save({ taskId: w.id, accountId: w.accountId, functionId: w.functionId, policy, attempt: 1, due: null, work: null, earlier: [], recorded: true, logKey: null, failedAt: null, durationMs: null });
  }

  /** The attempt failed and another follows at `due`: the run keeps the queue row and the attempt's lines (or where they were uploaded). */
  park(run: Run, work: NewWork, lines: string[] | { uploaded: string }, failed: { at: number; durationMs: number; storage: TaskDone["storage"] }, due: number): void {
    const copied = Array.isArray(lines);
    const earlier = copied ? [...run.earlier, ...earlierAttempt(run.attempt, lines)] : run.earlier;
    const { at: failedAt, durationMs, storage } = failed;
    this.save({ ...run, attempt: run.attempt + 1, due, work, earlier, recorded: false, logKey: copied ? null : lines.uploaded, failedAt, durationMs, storage });
  }

  recorded(taskId: string): void {
    const run = this.runs.get(taskId);
    if (run) this.save({ ...run, recorded: true });
  }

  /** The uploaded log of the attempt before `run.attempt` was read back. */
  logCopied(taskId: string, lines: string[]): void {
    const run = this.runs.get(taskId);
    if (run?.logKey) this.save({ ...run, logKey: null, earlier: [...run.earlier, ...earlierAttempt(run.attempt - 1, lines)] });
  }

  /** Runs whose backoff is over and whose last attempt is recorded: their work goes back to the queue, and they wait no more. */
  release(now: number): NewWork[] {
    const out: NewWork[] = [];
    for (const run of this.runs.values()) {
      if (run.due === null || run.due > now || !run.work || !run.recorded || run.logKey) continue;
      out.push(run.work);
      this.save({ ...run, due: null, work: null });
    }
    return out;
  }

  /** Runs with D1 or R2 work left (a failed write is retried by the alarm). */
  unsettled(): Run[] {
    return [...this.runs.values()].filter((r) => !r.recorded || r.logKey);
  }

  /** When the earliest waiting run is due (null: none waits). */
  earliestDue(): number | null {
    let min: number | null = null;
    for (const r of this.runs.values()) if (r.due !== null && (min === null || r.due < min)) min = r.due;
    return min;
  }

  /** The task ended for good: its run goes, and is returned. */
  end(taskId: string): Run | undefined {
    const run = this.runs.get(taskId);
    if (!run) return undefined;
    this.sql.exec("delete from retry_run where task_id = ?", taskId);
    this.runs.delete(taskId);
    return run;
  }

  /** The function was deleted: its runs go, and the ids of those waiting (not in the queue) are returned. */
  dropFunction(functionId: string): string[] {
    const gone = [...this.runs.values()].filter((r) => r.functionId === functionId);
    for (const r of gone) this.end(r.taskId);
    return gone.filter((r) => r.work).map((r) => r.taskId);
  }

  private save(run: Run): void {
    this.sql.exec("insert or replace into retry_run (task_id, run) values (?, ?)", run.taskId, JSON.stringify(run));
    this.runs.set(run.taskId, run);
  }
}
