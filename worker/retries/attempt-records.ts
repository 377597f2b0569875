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
 * Records failed attempts that another follows, in one batch. An attempt of a task its shard holds
 * needs nothing of D1's row: its invocation is in the shard's attempt sums (`metered`, statements
 * of shard-metering/), and the shard answers the task's reads with its attempts so far
 * (dispatch/held-reads.ts) until the final outcome writes them with the row. Any other (a task
 * issued before tasks lived in their shard) updates the row's count of attempts and writes a usage
 * row keyed `<task id>#<attempt>`, which its trigger counts (migrations/0024), as before. The last
 * attempt is metered as the task's own outcome. Idempotent, so the alarm may write a batch again.
 */
export async function attemptsRecorded(db: Db, failed: FailedAttempt[], metered: SQL[] = []): Promise<void> {
  const elsewhere = failed.filter((f) => !f.meteredHere);
  const statements = [...(elsewhere.length ? attemptRows(elsewhere) : []), ...metered];
  if (statements.length) await sqlBatch(db, statements);
}

/** The row's count of attempts and a usage row each, for attempts of tasks their shard does not hold. */
function attemptRows(failed: FailedAttempt[]): SQL[] {
  const json = JSON.stringify(failed.map((f) => ({ ...f, period: periodOf(f.at) })));
  const rows = sql`(select json_extract(value, '$.taskId') as id, json_extract(value, '$.attempt') as attempt,
    json_extract(value, '$.at') as at, json_extract(value, '$.durationMs') as duration_ms, json_extract(value, '$.period') as period
    from json_each(${json}))`;
  return [
    sql`update tasks set attempts = max(tasks.attempts, f.attempt), progress = 0 from ${rows} as f where tasks.id = f.id and tasks.finished_at is null`,
    sql`insert into usage (task_id, account_id, function_id, period, finished_at, duration_ms, mem_mib)
      select t.id || '#' || f.attempt, t.account_id, t.function_id, f.period, f.at, f.duration_ms,
        case when t.mem_size > 0 then t.mem_size else ${DEFAULT_BILLED_MEM_MIB} end
      from tasks t join ${rows} as f on t.id = f.id
      on conflict do nothing`,
  ];
}
