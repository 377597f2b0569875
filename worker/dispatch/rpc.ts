import type { TaskRow } from "../db/rows.js";
import type { ListedTask, ListQuery } from "../shard-history/list-query.js";
import type { NewWork } from "./work-rows.js";
import type { Grant } from "./revoked-grants.js";
import type { CreateAnswer, CreateRequest } from "../task-life/create-types.js";
import type { TaskScope } from "../tasks/counts.js";
import type { HeldCounts } from "../task-life/held-counts.js";
import type { ShardMeterView } from "../shard-metering/shard-meters.js";
import type { KeyClaim } from "../idempotency/key-store.js";
import type { Followed } from "./log-follows.js";
import type { FunctionPolicy } from "../retries/function-policy.js";
import type { Access } from "./nodes.js";
import type { FleetEntry, NodeFlags } from "./fleet.js";

/** A shard's queue and the agents connected to it, for the platform's metrics. */
export interface ShardStatus {
  waiting: number;
  running: number;
  recording: number;
  agents: { nodeId: string; slots: number; busy: number; privileged: boolean; egress: boolean; langs: string[]; rttMs: number; draining: boolean }[];
}

/**
 * What the dispatcher shard answers by RPC (durable-object.ts implements it; each method is
 * described there). Named apart from the class so that the bindings, and code the class itself
 * runs (a trigger's firing, a dead letter, a live log), can call a shard without importing the
 * class: that import closed a circle through every module the class uses.
 */
export interface DispatcherRpc extends Rpc.DurableObjectBranded {
  enqueue(work: NewWork[], once?: boolean): Promise<void>;
  grantChanged(grant: Grant, accountId: string, allowed: boolean): Promise<void>;
  sweepUnreachable(): Promise<number>;
  enqueueAndAwait(work: NewWork[], taskId: string, ms: number): Promise<TaskRow | null>;
  createTask(req: CreateRequest, waitMs?: number): Promise<CreateAnswer>;
  reserveChainPlaces(chainId: string, taskIds: string[], fresh: boolean): Promise<string[]>;
  releaseChainPlaces(chainId: string, taskIds: string[]): Promise<void>;
  heldTask(taskId: string): Promise<TaskRow | null>;
  listed(q: ListQuery): Promise<ListedTask[]>;
  archivedTask(taskId: string, accountId?: string): Promise<TaskRow | null>;
  heldCounts(scope: TaskScope, now: number, countsFrom?: number): Promise<HeldCounts>;
  heldIssued(accountId: string, since: number): Promise<{ functionId: string; day: number; count: number }[]>;
  meteredHere(accountId: string, period: string): Promise<ShardMeterView>;
  flushRecords(): Promise<number>;
  claimIdempotencyKey(scope: string, key: string, fingerprint: string): Promise<KeyClaim>;
  settleIdempotencyKey(scope: string, key: string, claim: string, taskId: string | null): Promise<void>;
  followTask(taskId: string, accountId: string): Promise<Followed | null>;
  tailFunction(functionId: string, accountId: string): Promise<Followed>;
  clearStorage(functionId: string): Promise<void>;
  admissionChanged(change: { functionId?: string; accountId?: string }): Promise<void>;
  configChanged(functionId: string): Promise<void>;
  policyChanged(functionId: string, p: FunctionPolicy): Promise<void>;
  setPaused(functionId: string, paused: boolean): Promise<void>;
  heldOfFunction(functionId: string): Promise<string[]>;
  cancelFunction(functionId: string): Promise<void>;
  awaitTask(taskId: string, ms: number): Promise<TaskRow | null>;
  awaitOwnTask(taskId: string, accountId: string, ms: number): Promise<{ row: TaskRow } | { progress: number } | null>;
  resync(): Promise<void>;
  held(taskIds: string[]): Promise<string[]>;
  holds(nodeId: string, access: Access): Promise<boolean>;
  closeToken(tokenId: string): Promise<void>;
  nodeChanged(nodeId: string, flags: NodeFlags): Promise<void>;
  fleet(): Promise<FleetEntry[]>;
  status(nodeId?: string): Promise<ShardStatus>;
  fetch(request: Request): Promise<Response>;
}
