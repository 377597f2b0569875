import type { SQL } from "drizzle-orm";
import type { TaskRow } from "../db/rows.js";
import type { Outcome } from "../dispatch/outcomes.js";
import { periodOf } from "../billing/plans.js";
import { DEFAULT_BILLED_MEM_MIB } from "../billing/billed-memory.js";
import { MeterBook, meterKey } from "./meter-book.js";
import { NO_USAGE, plus, type UsageSums } from "./usage-sums.js";
import { shardUsageFloors, type ShardUsageRow } from "./statements.js";
import { TASK_STATUS } from "../../shared/schemas/task.js";

/** The task as created here (or cancelled here), when this shard holds it (task-life/held-tasks.ts). */
export type HeldRowOf = (taskId: string) => TaskRow | undefined;

/**
 * What an outcome meters, by the rules D1's update applied (migrations/0024): nothing for a task
 * cancelled (410, or finished here by its function's deletion) or ended before any node had it;
 * else one invocation of its duration, at the memory it asked for or the default, in the UTC month
 * of its finish. `undefined` when the shard does not hold the task (one issued before tasks lived
 * in their shard): D1's update meters those, as before.
 */
export function meterOf(o: Outcome, created: TaskRow | undefined): { period: string; sums: UsageSums } | null | undefined {
  if (!created) return undefined;
  const status = o.report?.status ?? 504;
  if (status === TASK_STATUS.cancelled || created.finishedAt != null || !(o.node ?? created.node)) return null;
  const durationMs = o.report?.durationMs ?? 0;
  const mem = created.memSize > 0 ? created.memSize : DEFAULT_BILLED_MEM_MIB;
  return { period: periodOf(o.at), sums: { invocations: 1, durationMs, mibMs: durationMs * mem } };
}

/** A retried task's failed attempt (worker/retries/): one invocation, whatever its status, at the memory its task asked for. */
export interface FailedAttemptMeter {
  taskId: string;
  accountId: string;
  at: number;
  durationMs: number;
}

export function attemptMeterOf(a: FailedAttemptMeter, created: TaskRow | undefined): { period: string; sums: UsageSums } | undefined {
  if (!created) return undefined;
  const mem = created.memSize > 0 ? created.memSize : DEFAULT_BILLED_MEM_MIB;
  return { period: periodOf(a.at), sums: { invocations: 1, durationMs: a.durationMs, mibMs: a.durationMs * mem } };
}

/** What a usage read learns from one shard: its sums D1 has committed (`sent`) and those of outcomes it holds. */
export interface ShardMeterView {
  shard: string;
  sent: UsageSums;
  held: UsageSums;
}

/** A batch's metering: the tasks this shard meters, the statement for D1, and what to keep once D1 committed. */
export interface BatchMeters {
  /** Tasks held here: their outcomes' update (or their attempts' usage) meters nothing in D1 (statements.ts). */
  here: Set<string>;
  statements: SQL[];
  /** Call in the storage step that drops what the batch carried (the outcomes from the log, the attempts' runs as recorded). */
  committed(): void;
}

interface Metered {
  taskId: string;
  accountId: string;
  /** undefined: not held here, D1 meters it; null: metered as nothing. */
  meter: { period: string; sums: UsageSums } | null | undefined;
}

/**
 * Metering in the dispatcher shard (step 4 of docs/dispatch.md, "Task history past one database"):
 * each batch sends D1 one row an account and period, the shard's absolute sums, rather than
 * letting the update of every task's row meter it. This is what lets a task's outcome reach
 * usage_totals without D1 holding the task's row.
 *
 * Two instances a shard, each with sums and a D1 row of its own (`shard`: the shard's id, and
 * `<id>#attempts`): the group commit's outcomes and the retries' failed attempts are written by
 * two writers, each one batch at a time, and each batch's absolute sums must build on that writer's
 * last committed ones alone.
 */
export class ShardMeters {
  private readonly book: MeterBook;

  constructor(sql: SqlStorage, private readonly shard: string, table = "shard_meter") {
    this.book = new MeterBook(sql, table);
  }

  reload(): void {
    this.book.reload();
  }

  /** `logged`: every outcome still in the log (the batch's among them), read only when a past period is to be forgotten. */
  forBatch(batch: Outcome[], createdOf: HeldRowOf, logged: () => Outcome[], now: number): BatchMeters {
    const items = batch.map((o) => ({ taskId: o.taskId, accountId: o.accountId, meter: meterOf(o, createdOf(o.taskId)) }));
    return this.summed(items, now, () => logged().map((o) => meterKey(o.accountId, periodOf(o.at))));
  }

  /** `waiting`: every failed attempt not yet recorded (the batch's among them). */
  forAttempts(attempts: FailedAttemptMeter[], createdOf: HeldRowOf, waiting: () => FailedAttemptMeter[], now: number): BatchMeters {
    const items = attempts.map((a) => ({ taskId: a.taskId, accountId: a.accountId, meter: attemptMeterOf(a, createdOf(a.taskId)) }));
    return this.summed(items, now, () => waiting().map((a) => meterKey(a.accountId, periodOf(a.at))));
  }

  private summed(items: Metered[], now: number, pendingKeys: () => string[]): BatchMeters {
    const here = new Set<string>();
    const rows = new Map<string, ShardUsageRow>();
    for (const { taskId, accountId, meter } of items) {
      if (meter === undefined) continue;
      here.add(taskId);
      if (!meter) continue;
      const k = meterKey(accountId, meter.period);
      const base = rows.get(k) ?? { accountId, period: meter.period, ...this.book.get(accountId, meter.period) };
      rows.set(k, { ...base, ...plus(base, meter.sums) });
    }
    const writes = [...rows.values()];
    return {
      here,
      statements: writes.length ? [shardUsageFloors(this.shard, writes)] : [],
      committed: () => {
        for (const { accountId, period, ...sums } of writes) this.book.save(accountId, period, sums);
        this.book.forgetPast(periodOf(now), () => new Set(pendingKeys()));
      },
    };
  }

  /** The account's period as this shard has metered it: committed in D1, and held in the log (`logged`). */
  view(accountId: string, period: string, logged: Outcome[], createdOf: HeldRowOf): ShardMeterView {
    let held = NO_USAGE;
    for (const o of logged) {
      if (o.accountId !== accountId) continue;
      const m = meterOf(o, createdOf(o.taskId));
      if (m && m.period === period) held = plus(held, m.sums);
    }
    return { shard: this.shard, sent: this.book.get(accountId, period), held };
  }
}
