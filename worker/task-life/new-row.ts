import type { FunctionRow, TaskRow } from "../db/rows.js";
import { taskRow, type NewTask, type StagedInput } from "../tasks/row.js";

/** A task as the shard creates it: the issued fields (tasks/row.ts), and every other column as D1 defaults it. */
export function newTaskRow(o: NewTask, staged: StagedInput, now: number, fn: FunctionRow, buildId: string): TaskRow {
  return {
    ...taskRow(o, staged, now, fn, buildId),
    assignedAt: null,
    finishedAt: null,
    progress: 0,
    status: 0,
    node: null,
    networkLatency: 0,
    runtime: null,
    resultStatus: null,
    resultHeaders: null,
    resultBody: null,
    resultKey: null,
    log: null,
    logKey: null,
    durationMs: null,
    attempts: 0,
    purgedAt: null,
  };
}
