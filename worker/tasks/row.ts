import { taskInputKey } from "../lib/storage-keys.js";
import type { TaskInput } from "../../shared/schemas/task.js";
import type { FunctionRow, TaskRow } from "../db/rows.js";

export type { TaskRow };

/**
 * Inputs up to this size stay in the D1 row; larger ones go to R2, as results and logs over 4 KiB do
 * (dispatch/records.ts): a task's record stays small however large its input (issue 27), at the cost
 * of an R2 write when issued and a read when assigned for the few tasks above it.
 */
export const INLINE_INPUT_BYTES = 4 * 1024;

/** A new task, but for the function and build it runs. */
export interface NewTask {
  /** From newTaskId() (dispatch/client.ts), which puts the id on its function's shard. */
  id: string;
  accountId: string;
  input: TaskInput;
  endpointId?: string;
  triggerId?: string;
  parentTaskId?: string;
  hop?: number;
  chainId?: string;
  /** The schedule that issued the task (worker/schedules/). */
  scheduledId?: string;
}

/** A new task's id and its input: inline when small, else already put in R2 under `inputKey`. */
export interface StagedInput {
  id: string;
  input: string | null;
  inputKey: string | null;
}

export async function stageInput(bucket: R2Bucket, o: NewTask, now: number): Promise<StagedInput> {
  const id = o.id;
  const json = JSON.stringify(o.input);
  if (json.length <= INLINE_INPUT_BYTES) return { id, input: json, inputKey: null };
  const inputKey = taskInputKey(o.accountId, id);
  await bucket.put(inputKey, json);
  return { id, input: null, inputKey };
}

/** What a task copies from its function when issued: values, or `V` (SQL or columns) for each. */
type FunctionFields<V> = { [K in keyof TaskFunction]: TaskFunction[K] | V };
type TaskFunction = Pick<FunctionRow, "id" | "lang" | "timeout" | "cpuCount" | "memSize" | "privileged" | "egress">;

/**
 * A new task's row: the one list of what a task is issued with. `fn` and `buildId` are values
 * (`V` never), or SQL for an insert-select that reads them in the same statement.
 */
export function taskRow<V = never>(o: NewTask, staged: StagedInput, now: number, fn: FunctionFields<NoInfer<V>>, buildId: string | NoInfer<V>) {
  return {
    id: staged.id,
    accountId: o.accountId,
    functionId: fn.id,
    lang: fn.lang,
    buildId,
    endpointId: o.endpointId ?? null,
    triggerId: o.triggerId ?? null,
    parentTaskId: o.parentTaskId ?? null,
    chainId: o.chainId ?? null,
    scheduledId: o.scheduledId ?? null,
    hop: o.hop ?? 0,
    issuedAt: now,
    timeout: fn.timeout,
    cpuCount: fn.cpuCount,
    memSize: fn.memSize,
    privileged: fn.privileged,
    egress: fn.egress,
    input: staged.input,
    inputKey: staged.inputKey,
  };
}
