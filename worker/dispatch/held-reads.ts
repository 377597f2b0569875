import type { TaskRow } from "../db/rows.js";
import type { ChainFiring } from "./chain-firing.js";
import type { OutcomeLog } from "./outcomes.js";
import type { WorkQueue } from "./queue.js";
import type { RecentlyFinished } from "./recently-finished.js";
import type { Waiters } from "./waiters.js";
import type { Retries } from "../retries/retries.js";
import type { HeldTasks } from "../task-life/held-tasks.js";
import type { ShardLife } from "../task-life/shard-life.js";
import type { FinishedRecords } from "../shard-history/finished-records.js";

/** Where a shard's copy of a task, and its end, can be found. */
export interface ReadParts {
  queue: WorkQueue;
  outcomes: OutcomeLog;
  held: HeldTasks;
  life: ShardLife;
  retries: Retries;
  finished: RecentlyFinished;
  /** The finished records the shard keeps for the window: a read by id needs no D1 read for them. */
  history: FinishedRecords;
  waiters: Waiters;
  chains: ChainFiring;
}

/** Reads of the tasks a shard holds, answered from the shard before D1 has them (the RPC methods describe each). */
export class HeldReads {
  constructor(private readonly parts: ReadParts) {}

  async task(taskId: string): Promise<TaskRow | null> {
    const row = await this.parts.life.current(taskId);
    return row ? this.withAssignment(row) : (this.parts.history.whole(taskId, Date.now()) ?? null);
  }

  async ofAccount(q: { accountId: string; functionId?: string | undefined; before?: string | undefined; limit: number }): Promise<TaskRow[]> {
    // A row the commit recorded meanwhile is left to D1, which the list reads after the shards.
    const rows = await Promise.all(this.parts.held.ofAccount(q).map((r) => this.parts.life.current(r.id)));
    return rows.flatMap((r) => (r ? [this.withAssignment(r)] : []));
  }

  async awaitTask(taskId: string, ms: number): Promise<TaskRow | null> {
    const { queue, outcomes, retries, finished, waiters } = this.parts;
    const here = await this.finishedHere(taskId);
    if (here) return here;
    if (!queue.has(taskId) && !outcomes.has(taskId) && !retries.waiting(taskId)) return finished.get(taskId, Date.now()) ?? this.parts.history.whole(taskId, Date.now()) ?? null;
    return waiters.wait(taskId, ms);
  }

  async awaitOwnTask(taskId: string, accountId: string, ms: number): Promise<{ row: TaskRow } | { progress: number } | null> {
    const { queue, outcomes, retries, finished } = this.parts;
    // Finished here, its outcome maybe not yet in D1 (a lag, an outage): the shard's copy is the
    // answer, as for a read without ?wait; waiting for D1 would hold the reader for the whole wait.
    const recent = finished.get(taskId, Date.now()) ?? (await this.finishedHere(taskId)) ?? this.parts.history.whole(taskId, Date.now());
    if (recent) return recent.accountId === accountId ? { row: recent } : null;
    const owner = queue.get(taskId)?.account_id ?? outcomes.accountOf(taskId) ?? retries.runs.get(taskId)?.accountId;
    if (owner !== accountId) return null;
    const row = await this.awaitTask(taskId, ms);
    if (row) return { row };
    const w = queue.get(taskId);
    return w ? { progress: w.node ? 1 : 0 } : retries.waiting(taskId) ? { progress: 0 } : null;
  }

  held(taskIds: string[]): string[] {
    const { queue, outcomes, retries, chains } = this.parts;
    const planned = chains.planned();
    for (const id of retries.letters.planned()) planned.add(id);
    return taskIds.filter((id) => queue.has(id) || outcomes.has(id) || planned.has(id) || retries.waiting(id));
  }

  /** A task created here that finished here (its outcome accepted, or cancelled) and D1 has not recorded: readers need not wait for D1. */
  private async finishedHere(taskId: string): Promise<TaskRow | undefined> {
    const row = await this.parts.life.current(taskId);
    return row?.finishedAt != null ? row : undefined;
  }

  /** A held row as the queue knows it now: running on its node (D1 gets that mark later, or never). */
  private withAssignment(row: TaskRow): TaskRow {
    if (row.finishedAt != null) return row;
    const run = this.parts.retries.runs.get(row.id);
    // Failed attempts another follows count as D1 records them (retries/attempt-records.ts).
    const r = run && run.attempt > 1 ? { ...row, attempts: Math.max(row.attempts, run.attempt - 1) } : row;
    const w = this.parts.queue.get(row.id);
    return w?.node ? { ...r, node: w.node, assignedAt: w.assigned_at, progress: Math.max(r.progress, 1) } : r;
  }
}
