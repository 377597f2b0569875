import type { TaskRow } from "../db/rows.js";
import type { NewTask, StagedInput } from "../tasks/row.js";
import type { Refusal } from "./refusal.js";

/** What the Worker asks the function's shard to create (Dispatcher.createTask). */
export interface CreateRequest extends NewTask {
  functionId: string;
  staged: StagedInput;
  /** When the Worker drew the id (the id carries it): the task's issue time. */
  now: number;
  /** Never retried nor dead-lettered (a dead letter; a synchronous call is so anyway). */
  once?: boolean;
  /**
   * A creation made again (a trigger's firing or a dead letter sent again after an eviction or a
   * failure): the task may exist already, finished and gone from the shard's storage, so D1 is
   * asked before creating it. Off every caller's path.
   */
  mayExist?: boolean;
}

export type CreateAnswer = { task: TaskRow; finished: TaskRow | null } | { refused: Refusal };
