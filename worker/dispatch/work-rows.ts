/** The dispatcher queue's rows (queue.ts), named apart so that the queue's helpers can use them without importing the queue. */
export type WorkKind = "task" | "build";

/** A queue row without its payload. */
export interface WorkRow {
  id: string;
  kind: WorkKind;
  account_id: string;
  function_id: string;
  lang: string;
  privileged: number;
  /** 1 for a task that reaches the network (placed only on agents that allow it). */
  egress: number;
  cpu: number;
  mem: number;
  timeout_s: number;
  enqueued_at: number;
  node: string | null;
  assigned_at: number | null;
  deadline: number | null;
  /** How often it was assigned: work lost with its agent this often is given up (see attempts.ts). */
  attempts: number;
}

export interface NewWork {
  id: string;
  kind: WorkKind;
  accountId: string;
  functionId: string;
  lang: string;
  privileged: boolean;
  /** A task of a function with egress "internet"; absent: no network (builds, and callers from before egress). */
  egress?: boolean;
  cpu: number;
  mem: number;
  timeoutS: number;
  payload: unknown;
}
