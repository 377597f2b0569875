import type { AgentCaller } from "../callers.js";
import type { WorkRow } from "./queue.js";

/** What the dispatcher remembers of one connected agent, kept in its WebSocket attachment. */
export interface AgentState {
  nodeId: string;
  cpus: number;
  memMiB: number;
  privileged: boolean;
  /** Started with `--egress`: it runs tasks that reach the network (hello `egress`). */
  egress: boolean;
  langs: string[];
  slots: number;
  /** Builds the node runs at once; undefined: only `slots` limits them. */
  builds?: number;
  /** Whether the agent hands a task's configuration to the function (hello `configs`). */
  configs?: boolean;
  /** Whether the agent streams a followed task's output (hello `liveLogs`). */
  liveLogs?: boolean;
  /** Function ids with a warm container on the agent (capped: an attachment holds 16 KiB). */
  warm: string[];
  draining: boolean;
  lastSeen: number;
  rttMs: number;
}

/** Before hello a socket knows only whom its token speaks for; after, the agent and that token. */
/** `place`: this shard's index and count, which an older agent's hello needs to take its share of slots. */
/** Which of the shards an agent's connection reached (dispatch/nodes.ts forwards it). */
export interface ShardPlace {
  shard: number;
  shards: number;
}

export type Attachment = { hello: false; connectedAt: number; bound?: AgentCaller; place?: ShardPlace } | ({ hello: true } & NodeSocket & AgentState);

/** What the fleet list shows of a connection besides what placement uses. */
export interface NodeSocket {
  tokenId: string;
  connectedAt: number;
  agentVersion?: string;
  runtime?: string;
  /** `draining` is either: the agent's own (SIGTERM) or the operator's (see fleet.ts). */
  agentDraining?: boolean;
  operatorDraining?: boolean;
}

export const MAX_WARM_REMEMBERED = 200;

export function fits(a: AgentState, w: WorkRow): boolean {
  if (a.draining || !a.langs.includes(w.lang)) return false;
  if (w.privileged && !a.privileged) return false;
  // An agent without --egress refuses such a task: it is never offered one.
  if (w.egress && !a.egress) return false;
  // 0 means "the node's default", which any node can give.
  return w.cpu <= a.cpus && w.mem <= a.memMiB;
}

/**
 * Picks the agent for one piece of work: among those it fits and that have a free slot, one with a
 * warm container of the function first, then the one with the most free slots (spreading load),
 * then the nearest.
 */
export function pickAgent(agents: AgentState[], w: WorkRow, busy: Map<string, number>): AgentState | undefined {
  let best: AgentState | undefined;
  let bestScore = -Infinity;
  for (const a of agents) {
    const free = a.slots - (busy.get(a.nodeId) ?? 0);
    if (free <= 0 || !fits(a, w)) continue;
    const warm = w.kind === "task" && a.warm.includes(w.function_id) ? 1 : 0;
    const score = warm * 1e9 + free * 1e4 - Math.min(a.rttMs, 9999);
    if (score > bestScore) {
      best = a;
      bestScore = score;
    }
  }
  return best;
}
