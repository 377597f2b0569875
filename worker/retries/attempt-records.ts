import { sql, type SQL } from "drizzle-orm";
import { sqlBatch, type Db } from "../db/client.js";
import { DEFAULT_BILLED_MEM_MIB } from "../billing/billed-memory.js";
import { periodOf } from "../billing/plans.js";

export interface FailedAttempt {
  taskId: string;
  /** The attempt's number (1 for the first). */
  attempt: number;
  at: number;
  durationMs: number;
  /** Metered by the shard's sums (`metered`, shard-metering/): no usage row. */
  meteredHere: boolean;
}

/**
 * Records failed attempts that another follows, in one batch: the task's count of attempts so
 * far, and one invocation each (the plan counts attempts, not tasks). An attempt of a task its
 * shard holds is metered by the shard's sums (`metered`: statements of shard-metering/, in this
 * batch); any other by a usage row keyed `<task id>#<attempt>`, which its trigger counts
 * (migrations/0024). The last attempt is metered as the task's own outcome. Idempotent, so the
 * alarm may write a batch again.
 */
export async function attemptsRecorded(db: Db, failed: FailedAttempt[], metered: SQL[] = []): Promise<void> {
  if (!failed.length) return;
  const json = JSON.stringify(failed.map((f) => ({ ...f, period: periodOf(f.at), meteredHere: f.meteredHere ? 1 : 0 })));
  const rows = sql`(select json_extract(value, '$.taskId') as id, json_extract(value, '$.attempt') as attempt,
    json_extract(value, '$.at') as at, json_extract(value, '$.durationMs') as duration_ms, json_extract(value, '$.period') as period,
    json_extract(value, '$.meteredHere') as metered_here
    from json_each(${json}))`;
  await sqlBatch(db, [
    sql`update tasks set attempts = max(tasks.attempts, f.attempt), progress = 0 from ${rows} as f where tasks.id = f.id and tasks.finished_at is null`,
    sql`insert into usage (task_id, account_id, function_id, period, finished_at, duration_ms, mem_mib)
      select t.id || '#' || f.attempt, t.account_id, t.function_id, f.period, f.at, f.duration_ms,
        case when t.mem_size > 0 then t.mem_size else ${DEFAULT_BILLED_MEM_MIB} end
      from tasks t join ${rows} as f on t.id = f.id
      where f.metered_here = 0
      on conflict do nothing`,
    ...metered,
  ]);
}
