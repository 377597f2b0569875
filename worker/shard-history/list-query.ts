import type { TaskRow } from "../db/rows.js";

/** A task list's query: the account's tasks, or a function's of the account, newest first, below `before`. */
export interface ListQuery {
  accountId: string;
  functionId?: string | undefined;
  before?: string | undefined;
  limit: number;
}

/** What a task list shows of a task. */
export type ListedTask = Pick<TaskRow, "id" | "issuedAt" | "progress" | "status">;
