import { attemptMarker } from "../retries/attempt-log.js";
import type { AgentMessage } from "../../shared/protocol/messages.js";
import { FollowerStream } from "../live-logs/follower-stream.js";
import { sseEvent } from "../lib/sse.js";
import type { WorkRow } from "./queue.js";

type TaskLog = Extract<AgentMessage, { type: "task.log" }>;

/** Followers of one task at once (api-decisions "Live logs"; docs/security.md). */
export const MAX_TASK_FOLLOWERS = 10;
/** Tails of one function at once. */
export const MAX_FUNCTION_TAILS = 10;
/** Followers and tails of one account at once in one shard: what its buffers may hold, bounded. */
export const MAX_ACCOUNT_FOLLOWERS = 20;
const KEEPALIVE_MS = 15_000;
/** Said once to a follower when a run's lines reach the call's log bound (the agent's `cut`). */
export const CUT_NOTE = "[runtime] … the call's log reached its bound: later lines are not kept nor streamed (the finished log counts them)";
/** How long a probe of the followers at the cap waits for the gone ones to leave. */
const PROBE_MS = 100;

interface TaskFollower {
  stream: FollowerStream;
  /** The number of the next line this follower needs of the task's current run. */
  next: number;
  /** Whether it was told that the run's lines reached the log's bound. */
  cutSaid?: boolean;
}

interface FunctionTail {
  stream: FollowerStream;
  /** Per running task of the function: the number of the next line this tail needs. */
  next: Map<string, number>;
  /** Running tasks whose lines reached the log's bound, as this tail was told. */
  cutSaid: Set<string>;
}

export interface FollowHooks {
  /** Tells the node running the task to stream its output, or to stop. */
  follow(nodeId: string, taskId: string, on: boolean): void;
  /** The function's tasks running now (assigned to a node). */
  running(functionId: string): WorkRow[];
  /** The task as the queue holds it now (its node may have changed since it was followed). */
  get(taskId: string): WorkRow | undefined;
}

export type Followed = { stream: ReadableStream<Uint8Array> } | { limit: number; of: "task" | "function" | "account" };

/**
 * The live followers of a shard's tasks and functions, in memory only: a follower is an open
 * response, which an eviction ends anyway. With nobody following, the dispatcher's only cost is
 * `isFollowed`'s two map lookups per assignment and outcome, and agents send no extra frame: a node
 * streams a task's output only after `task.follow`, sent while the task has a follower.
 */
export class LogFollows {
  private readonly byTask = new Map<string, Set<TaskFollower>>();
  private readonly byFunction = new Map<string, Set<FunctionTail>>();
  private readonly perAccount = new Map<string, number>();
  private keepalive?: ReturnType<typeof setInterval>;

  constructor(private readonly hooks: FollowHooks) {}

  /**
   * A follower of a queued or running task (the caller checked that it is the caller's); null when
   * the task ended while the cap was checked.
   */
  async followTask(taskId: string, accountId: string): Promise<Followed | null> {
    if (!(await roomIn(this.byTask.get(taskId), MAX_TASK_FOLLOWERS))) return { limit: MAX_TASK_FOLLOWERS, of: "task" };
    const w = this.hooks.get(taskId);
    if (!w) return null;
    if (!this.admit(accountId)) return { limit: MAX_ACCOUNT_FOLLOWERS, of: "account" };
    const set = this.byTask.get(w.id) ?? new Set<TaskFollower>();
    const f: TaskFollower = {
      stream: new FollowerStream(() => {
        set.delete(f);
        if (set.size === 0 && this.byTask.get(w.id) === set) this.byTask.delete(w.id);
        const now = this.hooks.get(w.id);
        if (now?.node && !this.isFollowed(now)) this.hooks.follow(now.node, now.id, false);
        this.stopped(accountId);
      }),
      next: 0,
    };
    set.add(f);
    this.byTask.set(w.id, set);
    this.started(accountId);
    // A new follower needs the lines so far: the node sends them all again from the first.
    if (w.node) this.hooks.follow(w.node, w.id, true);
    return { stream: f.stream.body };
  }

  /** A tail of every task of the function that runs from now on, and of those running now. */
  async tailFunction(functionId: string, accountId: string): Promise<Followed> {
    if (!(await roomIn(this.byFunction.get(functionId), MAX_FUNCTION_TAILS))) return { limit: MAX_FUNCTION_TAILS, of: "function" };
    if (!this.admit(accountId)) return { limit: MAX_ACCOUNT_FOLLOWERS, of: "account" };
    const set = this.byFunction.get(functionId) ?? new Set<FunctionTail>();
    const t: FunctionTail = {
      stream: new FollowerStream(() => {
        set.delete(t);
        if (set.size === 0) this.byFunction.delete(functionId);
        for (const w of this.hooks.running(functionId)) if (!this.isFollowed(w)) this.hooks.follow(w.node!, w.id, false);
        this.stopped(accountId);
      }),
      next: new Map(),
      cutSaid: new Set(),
    };
    set.add(t);
    this.byFunction.set(functionId, set);
    this.started(accountId);
    for (const w of this.hooks.running(functionId)) {
      t.next.set(w.id, 0);
      t.stream.notice(taskEvent(w.id, "running"));
      this.hooks.follow(w.node!, w.id, true);
    }
    return { stream: t.stream.body };
  }

  isFollowed(w: WorkRow): boolean {
    return this.byTask.has(w.id) || this.byFunction.has(w.function_id);
  }

  /**
   * The task went to a node (again, after a requeue): its followers start over with this run's lines.
   * A retry's run (`attempt` 2 and later, worker/retries/) opens with the marker line its recorded
   * log will have, so that a follower can tell the attempts apart as the log does.
   */
  assigned(w: WorkRow, nodeId: string, attempt = 1): void {
    if (!this.isFollowed(w)) return;
    const marker = attempt > 1 ? attemptMarker(attempt) : null;
    for (const f of this.byTask.get(w.id) ?? []) {
      Object.assign(f, { next: 0, cutSaid: false });
      if (marker) f.stream.notice(sseEvent("line", marker));
    }
    for (const t of this.byFunction.get(w.function_id) ?? []) {
      t.next.set(w.id, 0);
      t.cutSaid.delete(w.id);
      t.stream.notice(taskEvent(w.id, "started"));
      if (marker) t.stream.notice(sseEvent("line", JSON.stringify({ taskId: w.id, line: marker })));
    }
    this.hooks.follow(nodeId, w.id, true);
  }

  /** A node's batch of a running task's lines (numbered from `first`). */
  lines(w: WorkRow, msg: TaskLog): void {
    for (const f of this.byTask.get(w.id) ?? []) {
      f.next = relay(f.stream, f.next, msg.first, msg.lines, (line) => line);
      if (msg.cut && !f.cutSaid) {
        f.cutSaid = true;
        f.stream.notice(sseEvent("line", CUT_NOTE));
      }
    }
    for (const t of this.byFunction.get(w.function_id) ?? []) {
      const next = t.next.get(w.id);
      if (next === undefined) continue;
      const tailLine = (line: string) => JSON.stringify({ taskId: w.id, line });
      t.next.set(w.id, relay(t.stream, next, msg.first, msg.lines, tailLine));
      if (msg.cut && !t.cutSaid.has(w.id)) {
        t.cutSaid.add(w.id);
        t.stream.notice(sseEvent("line", tailLine(CUT_NOTE)));
      }
    }
  }

  /**
   * The task's outcome is in. Its followers get the lines of the finished log they had not got
   * (lines a batch still in flight, or a slow node, had not brought), then the end.
   */
  ended(w: WorkRow, status: number, log: string[] | null): void {
    if (!this.isFollowed(w)) return;
    const tail = log ?? [];
    const followers = this.byTask.get(w.id);
    this.byTask.delete(w.id);
    for (const f of followers ?? []) {
      relay(f.stream, f.next, 0, tail, (line) => line);
      f.stream.end(sseEvent("end", JSON.stringify({ status })));
    }
    for (const t of this.byFunction.get(w.function_id) ?? []) {
      const next = t.next.get(w.id);
      if (next === undefined) continue;
      t.next.delete(w.id);
      t.cutSaid.delete(w.id);
      relay(t.stream, next, 0, tail, (line) => JSON.stringify({ taskId: w.id, line }));
      t.stream.notice(taskEvent(w.id, "ended", status));
    }
  }

  /** The function was deleted: its followers and tails end. */
  functionGone(functionId: string, taskIds: string[]): void {
    for (const id of taskIds) {
      for (const f of this.byTask.get(id) ?? []) f.stream.end(sseEvent("end", JSON.stringify({ status: 410 })));
      this.byTask.delete(id);
    }
    for (const t of this.byFunction.get(functionId) ?? []) t.stream.end();
    this.byFunction.delete(functionId);
  }

  /** Whether the account may open one more follower here (it counts once `started`). */
  private admit(accountId: string): boolean {
    return (this.perAccount.get(accountId) ?? 0) < MAX_ACCOUNT_FOLLOWERS;
  }

  private started(accountId: string): void {
    this.perAccount.set(accountId, (this.perAccount.get(accountId) ?? 0) + 1);
    this.keepalive ??= setInterval(() => {
      for (const set of [...this.byTask.values(), ...this.byFunction.values()]) for (const f of set) f.stream.keepalive();
    }, KEEPALIVE_MS);
  }

  private stopped(accountId: string): void {
    const n = (this.perAccount.get(accountId) ?? 1) - 1;
    if (n > 0) this.perAccount.set(accountId, n);
    else this.perAccount.delete(accountId);
    if (this.byTask.size || this.byFunction.size) return;
    if (this.keepalive !== undefined) clearInterval(this.keepalive);
    this.keepalive = undefined;
  }
}

/**
 * Whether one more follower fits. A reader that went away is only noticed when its stream is next
 * written to: at the cap, each follower gets a keepalive first, and those gone leave meanwhile.
 */
async function roomIn(set: Set<{ stream: FollowerStream }> | undefined, max: number): Promise<boolean> {
  if (!set || set.size < max) return true;
  for (const f of set) f.stream.keepalive();
  await new Promise((resolve) => setTimeout(resolve, PROBE_MS));
  return set.size < max;
}

/** Sends the lines of a batch this follower has not had; returns its next line number. */
function relay(stream: FollowerStream, next: number, first: number, lines: string[], data: (line: string) => string): number {
  if (first > next) {
    // A new follower waits for the lines so far, which the node sends from the first line. One that
    // had lines lost those between (a batch the node could not send): they count as dropped.
    if (next === 0) return next;
    stream.lost(first - next);
    next = first;
  }
  for (let i = next - first; i < lines.length; i++) stream.line(sseEvent("line", data(lines[i]!)));
  return Math.max(next, first + lines.length);
}

function taskEvent(taskId: string, state: "running" | "started" | "ended", status?: number): string {
  return sseEvent("task", JSON.stringify({ taskId, state, ...(status !== undefined ? { status } : {}) }));
}
