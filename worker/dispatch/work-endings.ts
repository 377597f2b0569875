import type { DispatcherMessage } from "../../shared/protocol/messages.js";
import type { AssignedMarks } from "./assigned-marks.js";
import { abandonedReason, abandonedReport } from "./attempts.js";
import type { BuildReports } from "./build-reports.js";
import { log } from "./dispatcher-log.js";
import type { GroupCommit } from "./group-commit.js";
import type { LogFollows } from "./log-follows.js";
import type { OutcomeLog, Outcome, TaskDone } from "./outcomes.js";
import type { WorkQueue, WorkRow } from "./queue.js";
import type { DispatcherStorage } from "../storage/dispatcher-store.js";
import type { Retries } from "../retries/retries.js";
import type { ShardLife } from "../task-life/shard-life.js";
import type { HeldTasks } from "../task-life/held-tasks.js";
import type { ConcurrencyCaps } from "../concurrency/caps.js";
import type { TaskConfigs } from "../function-config/task-configs.js";
import type { Waiters } from "./waiters.js";

/** What ending work touches of its shard. */
export interface EndingParts {
  queue: WorkQueue;
  outcomes: OutcomeLog;
  marks: AssignedMarks;
  follows: LogFollows;
  storage: DispatcherStorage;
  retries: Retries;
  life: ShardLife;
  builds: BuildReports;
  commits: GroupCommit;
  waiters: Waiters;
  caps: ConcurrencyCaps;
  configs: TaskConfigs;
  held: HeldTasks;
  sendTo(nodeId: string, msg: DispatcherMessage): void;
  scheduleAlarm(): Promise<void>;
}

/** How work leaves the queue: accepted with its outcome, held for a retry, expired, given up, or its function gone. */
export class WorkEndings {
  constructor(private readonly parts: EndingParts) {}

  /**
   * A failed attempt with attempts left waits for its retry (worker/retries/), out of the queue. Its
   * assigned mark goes (the task is pending again); the storage it set is the function's, and the
   * next attempt gets it.
   */
  retried(w: WorkRow, report: TaskDone | null, now: number): boolean {
    if (!this.parts.retries.retry(w, report, now)) return false;
    this.parts.marks.take(w.id);
    if (report?.storage) this.parts.storage.apply(w.function_id, w.account_id, w.id, report.storage, now);
    return true;
  }

  /** The task leaves the queue and its outcome enters the log, in one synchronous step. */
  accept(w: WorkRow, report: TaskDone | null, now: number, rttMs: number, frame?: string) {
    const { marks, follows, queue, storage, retries, outcomes, life } = this.parts;
    const mark = marks.take(w.id);
    follows.ended(w, report?.status ?? 504, report && !report.logUploaded ? report.log : null);
    queue.remove(w.id);
    if (report?.storage) storage.apply(w.function_id, w.account_id, w.id, report.storage, now);
    const attempts = retries.ended(w, report);
    const outcome: Outcome = { taskId: w.id, accountId: w.account_id, functionId: w.function_id, at: now, node: w.node, assignedAt: w.assigned_at, rttMs: mark?.rttMs ?? rttMs, report, ...attempts };
    outcomes.add(outcome, frame);
    life.accepted(outcome);
    // A dead letter was planned: the alarm sends it once the outcome is in D1, whoever accepted it.
    if (attempts && retries.letters.size) void this.parts.scheduleAlarm();
  }

  /** Ends work with the dispatcher's own outcome, stopping it on its node if it runs there. */
  stop(w: WorkRow, report: TaskDone): void {
    if (w.node) this.parts.sendTo(w.node, { type: "task.cancel", taskId: w.id });
    this.accept(w, report, Date.now(), 0);
  }

  async expire(w: WorkRow, now: number): Promise<void> {
    if (w.node) this.parts.sendTo(w.node, { type: "task.cancel", taskId: w.id });
    if (w.kind === "task") {
      if (!this.retried(w, null, now)) this.accept(w, null, now, 0); // written by the alarm's commit, with any others
    } else await this.parts.builds.failed(w, "no result from the agent in time", now);
  }

  /** Work lost with its agent MAX_ATTEMPTS times fails rather than run again (see attempts.ts). */
  abandon(w: WorkRow, now: number): void {
    log("warn", "work given up", { id: w.id, kind: w.kind, attempts: w.attempts });
    if (w.kind === "task") {
      this.accept(w, abandonedReport(w), now, 0);
      void this.parts.commits.run();
    } else void this.parts.builds.failed(w, abandonedReason(w), now).catch((e) => log("error", "failing a build failed", { buildId: w.id, error: String(e) }));
  }

  /** The function was deleted: drop its queued work and stop what runs. */
  functionGone(functionId: string): void {
    const { storage, configs, queue, follows, retries, life, marks, waiters, caps, held, commits } = this.parts;
    storage.clear(functionId);
    configs.changed(functionId);
    const removed = queue.removeFunction(functionId);
    follows.functionGone(functionId, removed.map((w) => w.id));
    const dropped = retries.dropFunction(functionId);
    life.cancel([...removed.map((w) => w.id), ...dropped], Date.now());
    for (const w of removed) {
      marks.take(w.id);
      waiters.wake(w.id, null);
      if (w.node && w.kind === "task") this.parts.sendTo(w.node, { type: "task.cancel", taskId: w.id });
    }
    for (const id of dropped) waiters.wake(id, null);
    retries.policies.set(functionId, null);
    caps.set(functionId, null);
    if (held.waiting) void commits.run();
  }
}
