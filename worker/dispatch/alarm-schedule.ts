import type { ChainFiring } from "./chain-firing.js";
import type { OutcomeLog } from "./outcomes.js";
import type { WorkQueue } from "./queue.js";
import type { HeldTasks } from "../task-life/held-tasks.js";
import type { Retries } from "../retries/retries.js";
import type { ShardArchive } from "../shard-history/archive.js";
import { HEARTBEAT_MS } from "./agent-protocol.js";

/** After a failed D1 write, outcomes are retried this much later (by the alarm). */
const RETRY_MS = 1_000;

/** What the shard's alarm waits for: records not yet in D1, work deadlines, retries, the archive's roll and retention. */
export interface AlarmParts {
  outcomes: OutcomeLog;
  held: HeldTasks;
  chains: ChainFiring;
  queue: WorkQueue;
  retries: Retries;
  archive: Pick<ShardArchive, "nextAt">;
}

/** The shard's one alarm. */
export class AlarmSchedule {
  /** The alarm time this instance set (undefined until read from storage). */
  private alarmAt: number | null | undefined;

  constructor(
    private readonly ctx: Pick<DurableObjectState, "getWebSockets" | "storage">,
    private readonly parts: AlarmParts,
  ) {}

  fired(): void {
    this.alarmAt = null; // this one has fired
  }

  /** The time set is read from storage again (resync). */
  forget(): void {
    this.alarmAt = undefined;
  }

  /** One alarm: the earliest work deadline, or the next liveness round while agents are connected. */
  async schedule(): Promise<void> {
    const { outcomes, held, chains, queue, retries, archive } = this.parts;
    const deadline = outcomes.count() || held.waiting || chains.failed ? Date.now() + RETRY_MS : queue.earliestDeadline();
    const liveness = this.ctx.getWebSockets().length ? Date.now() + HEARTBEAT_MS : null;
    const at = Math.min(deadline ?? Infinity, liveness ?? Infinity, retries.nextAt(Date.now()) ?? Infinity, archive.nextAt() ?? Infinity);
    if (at === Infinity) return;
    // Only this object sets its alarm, so after the first read the time is known in memory.
    if (this.alarmAt === undefined) this.alarmAt = await this.ctx.storage.getAlarm();
    if (this.alarmAt === null || this.alarmAt > at || this.alarmAt < Date.now()) {
      await this.ctx.storage.setAlarm(at);
      this.alarmAt = at;
    }
  }
}
