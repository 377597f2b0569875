import type { TaskRow } from "../db/rows.js";
import type { NewTask, StagedInput } from "../tasks/row.js";
import type { Refusal } from "./refusal.js";

/** What the Worker asks the function's shard to create (Dispatcher.createTask). */
export interface CreateRequest extends NewTask {
  functionId: string;
  staged: StagedInput;
  /** When the Worker drew the id (the id carries it): the task's issue time. */
  now: number;
}

export type CreateAnswer = { task: TaskRow; finished: TaskRow | null } | { refused: Refusal };
