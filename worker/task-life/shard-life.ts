import type { StoreBindings } from "../bindings.js";
import { recordedAnywhere, type ShardArchiveFinder } from "./archived-reads.js";
import type { Db } from "../db/client.js";
import type { TaskRow } from "../db/rows.js";
import { periodOf } from "../billing/plans.js";
import type { ShardAdmission } from "../shard-admission/leases.js";
import { taskWork } from "../dispatch/work.js";
import { outcomeElement } from "../dispatch/records.js";
import type { NewWork } from "../dispatch/work-rows.js";
import type { Outcome } from "../dispatch/outcomes.js";
import type { RecentlyFinished } from "../dispatch/recently-finished.js";
import type { Waiters } from "../dispatch/waiters.js";
import type { HeldTasks } from "./held-tasks.js";
import type { IssueCounts } from "../shard-history/issue-counts.js";
import type { RecordCounts } from "../shard-history/record-counts.js";
import { finishedRow, type OutcomeElement } from "./finished-row.js";
import { newTaskRow } from "./new-row.js";
import { shardsCountAccountDaysFrom, shardsCountIssuesFrom } from "../tasks/issue-counts-from.js";
import { refusalOf, type Refusal } from "./refusal.js";
import { isStorageUnavailable, storageUnavailable } from "../db/unavailable.js";
import type { CreateAnswer, CreateRequest } from "./create-types.js";

export interface LifeParts {
  held: HeldTasks;
  admission: Pick<ShardAdmission, "admit" | "ended">;
  /**
   * Shared with the group commit, which uses an element made (or being made) here rather than make
   * it again: one R2 put of a large result, whoever asks first.
   */
  elements: Map<string, Promise<OutcomeElement>>;
  finished: RecentlyFinished;
  waiters: Waiters;
  enqueue: (work: NewWork[], once: boolean) => Promise<void>;
  /** Asks for a group commit (it keeps its gap). */
  flush: () => void;
  /** The task's outcome in the shard's outcome log (accepted, not yet in D1). */
  logged: (taskId: string) => Outcome | undefined;
  /** The week's issue times, which a created task adds to in the step that writes it (shard-history/issue-counts.ts). */
  issues: Pick<IssueCounts, "issued">;
  /** The shard's own archive: a creation sent again may find its task archived there. */
  archive: ShardArchiveFinder;
  /** The counts of rowless tasks, which a created one adds to in the step that writes it. */
  recorded: Pick<RecordCounts, "created">;
}

/** Whether the deployment's new tasks are rowless (TASK_ROWS = "shard"): D1 never gets their rows (held-tasks.ts). */
export const rowlessTasks = (env: Pick<StoreBindings, "TASK_ROWS">): boolean => env.TASK_ROWS === "shard";

/**
 * A task's life in its shard, the part the dispatcher does not already do: creating it (admitted,
 * held, queued) and answering its caller the moment its outcome is durable here.
 */
export class ShardLife {
  /** Whether tasks created from now on are rowless (tests of both layouts set it). */
  rowless: boolean;

  constructor(
    private readonly env: Pick<StoreBindings, "BUCKET" | "TASK_ROWS">,
    private readonly db: Db,
    private readonly parts: LifeParts,
  ) {
    this.rowless = rowlessTasks(env);
  }

  async create(req: CreateRequest, waitMs: number): Promise<CreateAnswer> {
    const { held, waiters, enqueue, flush } = this.parts;
    // A retry of a call whose answer was lost: the task exists, and is not created twice.
    const existing = held.get(req.id);
    if (existing) return { task: existing, finished: waitMs > 0 && existing.finishedAt == null ? await waiters.wait(req.id, waitMs) : existing.finishedAt != null ? existing : null };
    if (req.mayExist) {
      const recorded = await recordedAnywhere(this.db, this.env.BUCKET, req.accountId, req.id, this.parts.archive);
      if (recorded) return { task: recorded, finished: recorded.finishedAt != null ? recorded : null };
    }
    let admitted;
    try {
      admitted = await this.parts.admission.admit(req.accountId, req.functionId, req.now);
    } catch (e) {
      // A function the shard does not know yet needs D1: unreachable, the caller is told to retry
      // (an RPC carries only the message, which drizzle's wrapper hides, so it is decided here).
      if (isStorageUnavailable(e)) return { refused: refusalOf(storageUnavailable()) };
      throw e;
    }
    if ("refused" in admitted) return { refused: admitted.refused as Refusal };
    const rowless = this.rowless && req.now >= (await this.rowlessFrom());
    const row = newTaskRow(req, req.staged, req.now, admitted.fn, admitted.buildId);
    held.add(row, rowless);
    this.parts.issues.issued(row, req.now);
    if (rowless) this.parts.recorded.created(row, req.now);
    // Registered before the task is queued: no outcome can slip past it.
    const finished = waitMs > 0 ? waiters.wait(row.id, waitMs) : null;
    await enqueue([taskWork(row)], req.once === true || waitMs > 0);
    flush();
    return { task: row, finished: finished ? await finished : null };
  }

  /**
   * An outcome was accepted (it is durable in the outcome log): a task created here is finished for
   * its readers now. A result too large for the row goes to R2 first, as the commit would put it.
   * A retried task's earlier attempts' log is joined by the commit alone (it edits R2 in place).
   */
  accepted(o: Outcome): void {
    const { held, admission } = this.parts;
    const created = held.get(o.taskId);
    if (!created) return;
    // Metered as the commit meters (dispatch/records.ts): run on a node, and not cancelled.
    admission.ended(o.accountId, periodOf(created.issuedAt), o.taskId, o.node != null && (o.report?.status ?? 504) !== 410);
    void this.answerEarly(o);
  }

  /**
   * The shard's newest copy of a task it holds, for its readers; undefined once D1 has the final
   * record. A task whose outcome is logged here reads finished, its view made now if there is none
   * yet: views are memory only (they cost no storage write), so a fresh instance (an eviction, a
   * deploy, a crash before the commit) has none, and makes each again on its first read from what
   * is durable, the held row and the outcome log. Nothing is metered or settled again (accepted()
   * did that, and admission keeps its own record); a large result goes to the same R2 key, and the
   * commit uses the element made here. A reader that comes while the first answer still puts its
   * result in R2 waits for that answer too.
   */
  async current(taskId: string): Promise<TaskRow | undefined> {
    const { held, logged } = this.parts;
    const row = held.get(taskId);
    // Finished already: by its view, or cancelled by its function's deletion (which D1 keeps too).
    if (!row || row.finishedAt != null) return row;
    const o = logged(taskId);
    if (!o) return row;
    await this.answerEarly(o);
    return held.get(taskId);
  }

  /** Answers in flight, so that readers who come meanwhile wait for the same one. */
  private readonly answering = new Map<string, Promise<void>>();

  /** Answers the task's caller and readers from the shard; a failure leaves them to D1's record. */
  private answerEarly(o: Outcome): Promise<void> {
    if (o.earlier?.length) return Promise.resolve();
    const known = this.answering.get(o.taskId);
    if (known) return known;
    const answer = this.answer(o)
      .catch((e: unknown) =>
        console.error(JSON.stringify({ level: "error", component: "dispatcher", msg: "answering a task early failed; its readers wait for D1", taskId: o.taskId, error: String(e) })),
      )
      .finally(() => this.answering.delete(o.taskId));
    this.answering.set(o.taskId, answer);
    return answer;
  }

  /** Tasks created here that the function's deletion cancelled: they end, and give back what they held. */
  cancel(ids: string[], now: number): void {
    const { held, admission } = this.parts;
    for (const id of ids) {
      const row = held.get(id);
      if (row && row.finishedAt == null) admission.ended(row.accountId, periodOf(row.issuedAt), id, false);
    }
    held.cancel(ids, now);
  }

  /**
   * From when a task may be rowless: once the shards count every issue of functions, endpoints and
   * accounts (migrations 0032 and 0033), since today's and the week's counts of a task issued
   * before read D1's rows. Until D1 answers, tasks get rows.
   */
  private async rowlessFrom(): Promise<number> {
    try {
      const [functions, accounts] = await Promise.all([shardsCountIssuesFrom(this.db), shardsCountAccountDaysFrom(this.db)]);
      return Math.max(functions ?? Infinity, accounts ?? Infinity);
    } catch {
      return Infinity;
    }
  }

  private async answer(o: Outcome): Promise<void> {
    const { held, finished, waiters } = this.parts;
    const element = await this.elementOf(o);
    const created = held.get(o.taskId);
    if (!created) return; // the commit got there first, and woke the readers with D1's row
    const row: TaskRow = finishedRow(created, element);
    held.finished(row);
    finished.add(row, Date.now());
    waiters.wake(o.taskId, row);
  }

  /**
   * The outcome's element, made once: registered before its R2 put starts, so a commit that begins
   * meanwhile waits for it rather than put the result a second time. A failed one is not kept: the
   * commit that finds it fails, and its retry makes the element again.
   */
  private elementOf(o: Outcome): Promise<OutcomeElement> {
    const { elements } = this.parts;
    const known = elements.get(o.taskId);
    if (known) return known;
    const made = outcomeElement(this.env.BUCKET, o);
    elements.set(o.taskId, made);
    made.catch(() => elements.get(o.taskId) === made && elements.delete(o.taskId));
    return made;
  }
}
