import type { TaskRow } from "../db/rows.js";
import type { OutcomeElement } from "../dispatch/records.js";

export type { OutcomeElement };

/**
 * The row an outcome finishes, as the group commit's update will write it (dispatch/records.ts,
 * outcomesWritten, column for column): what a synchronous call is answered with the moment the
 * outcome is durable in the shard, before D1 has it.
 */
export function finishedRow(created: TaskRow, o: OutcomeElement): TaskRow {
  const runtime = "runtime" in o ? o.runtime : null;
  return {
    ...created,
    finishedAt: o.at,
    progress: 100,
    status: o.status,
    resultStatus: o.status,
    resultHeaders: o.headers,
    resultBody: o.body,
    resultKey: o.key,
    log: o.log,
    logKey: o.logKey,
    durationMs: o.durationMs,
    node: o.node ?? created.node,
    assignedAt: o.assignedAt ?? created.assignedAt,
    networkLatency: o.rtt ?? created.networkLatency,
    runtime: runtime ?? created.runtime,
    attempts: o.attempts ?? created.attempts,
  };
}
