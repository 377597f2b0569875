import type { Bindings } from "../env.js";
import type { Db } from "../db/client.js";
import type { TaskRow } from "../services/tasks.js";
import { admissionLimits } from "../services/admission.js";
import { fireTriggers, type TriggerCandidate } from "./chain.js";
import { enqueueTasks, newTaskId } from "./client.js";
import type { Dispatcher } from "./durable-object.js";

/**
 * Fires the triggers of finished tasks off the dispatcher's commit path: a commit hands its
 * finished tasks over and goes on (its readers are woken first), and the chained tasks of every
 * commit since the last firing are issued together, in one insert (fireTriggers). Memory only, as
 * before: an eviction between a commit and its firing loses those chained tasks.
 */
export class ChainFiring {
  private pending: { finished: TaskRow[]; triggers: TriggerCandidate[] }[] = [];
  private running: Promise<void> | undefined;

  constructor(
    private readonly env: Bindings,
    private readonly db: Db,
    private readonly self: { id: DurableObjectId; self: Dispatcher },
    private readonly onError: (e: unknown, taskIds: string[]) => void,
  ) {}

  add(finished: TaskRow[], triggers: TriggerCandidate[]): void {
    if (!finished.length || !triggers.length) return;
    this.pending.push({ finished, triggers });
    this.running ??= this.drain().finally(() => (this.running = undefined));
  }

  private async drain(): Promise<void> {
    while (this.pending.length) {
      const batch = this.pending.splice(0);
      const finished = batch.flatMap((b) => b.finished);
      // A trigger read by several commits fires once per finished task, with its newest admission.
      const triggers = new Map(batch.flatMap((b) => b.triggers.map((t) => [t.trigger.id, t] as const)));
      try {
        const next = await fireTriggers(this.db, this.env.BUCKET, admissionLimits(this.env), finished, [...triggers.values()], (fn) => newTaskId(this.env, fn));
        if (next.length) await enqueueTasks(this.env, next, this.self);
      } catch (e) {
        this.onError(e, finished.map((t) => t.id));
      }
    }
  }
}
