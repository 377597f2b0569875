import type { z } from "zod";
import type { AgentMessage, hello } from "../../shared/protocol/messages.js";
import type { AgentCaller } from "../callers.js";
import type { Db } from "../db/client.js";
import { ApiError } from "../errors.js";
import { TOKEN_CACHE_MS } from "../lib/token-cache.js";
import type { Attachment, ShardPlace } from "./agents.js";
import { nodeHello, type NodeFlags } from "./fleet.js";
import type { WorkQueue } from "./queue.js";

/**
 * A node sees only its own work. The Worker tells the dispatcher which node a connection's token
 * speaks for; the dispatcher holds every socket to that node id, admits reports only about work it
 * assigned to that node, and answers the agent routes' question "does this node hold this work?".
 */

/** Set by the Worker on the connect it forwards (a client's own are overwritten): whom the token speaks for. */
const NODE_HEADER = "x-gcfaas-node-id";
const TOKEN_HEADER = "x-gcfaas-token-id";
/** "<shard>/<shards>" as the forwarding Worker counts them: an older agent's slots are divided by it (slot-shares.ts). */
const SHARD_HEADER = "x-gcfaas-shard";

/** Close codes an agent sees besides the dispatcher's 4000 (silent) and 4001 (replaced). */
export const CLOSE = {
  wrongNode: 4003,
  revoked: 4004,
  disabled: 4005,
} as const;

export function forwardConnect(req: Request, agent: AgentCaller, place: ShardPlace): Request {
  const headers = new Headers(req.headers);
  headers.set(NODE_HEADER, agent.nodeId);
  headers.set(TOKEN_HEADER, agent.tokenId);
  headers.set(SHARD_HEADER, `${place.shard}/${place.shards}`);
  return new Request(req, { headers });
}

/** Which shard of how many the Worker forwarded the connect to (the only one of one without a word). */
export function shardOfConnect(req: Request): ShardPlace {
  const m = /^(\d+)\/(\d+)$/.exec(req.headers.get(SHARD_HEADER) ?? "");
  const [shard, shards] = m ? [Number(m[1]), Number(m[2])] : [0, 1];
  return shards >= 1 && shard < shards ? { shard, shards } : { shard: 0, shards: 1 };
}

export function boundTo(req: Request): AgentCaller | undefined {
  const nodeId = req.headers.get(NODE_HEADER);
  const tokenId = req.headers.get(TOKEN_HEADER);
  return nodeId && tokenId ? { nodeId, tokenId } : undefined;
}

/** A connect without the Worker's word on its token, or with a token revoked since an isolate cached it. */
export const connectRefused = () =>
  Response.json(new ApiError("unauthorized", "a valid agent token is required; connect through /v1/agent/connect").body(), { status: 401 });

/** Whom a socket's token speaks for, before or after its hello. */
export const boundOf = (att: Attachment | null): AgentCaller | undefined => (att?.hello ? { nodeId: att.nodeId, tokenId: att.tokenId } : att?.bound);

export const boundSockets = (sockets: WebSocket[], match: (b: AgentCaller) => boolean): WebSocket[] =>
  sockets.filter((ws) => {
    const b = boundOf(ws.deserializeAttachment() as Attachment | null);
    return b !== undefined && match(b);
  });

export type Admission = { bound: AgentCaller; flags: NodeFlags } | { code: number; reason: string; error?: string };

/**
 * A hello is admitted when it names the node its token speaks for (the node id is the token's,
 * never the agent's word: a hello naming another node would take that node's work) and the node is
 * not disabled. The node's report is recorded in D1 on the way, which returns the operator's flags.
 */
export async function admitHello(db: Db, att: Attachment, h: z.infer<typeof hello>, now: number): Promise<Admission> {
  const bound = boundOf(att);
  // A close reason holds 123 bytes.
  if (!bound || bound.nodeId !== h.nodeId) return { code: CLOSE.wrongNode, reason: `this token is bound to node ${bound?.nodeId ?? "(none)"}, the hello named ${h.nodeId}`.slice(0, 120) };
  let flags: NodeFlags;
  try {
    flags = await nodeHello(db, h, now);
  } catch (e) {
    return { code: 1011, reason: "the control plane could not record this node; reconnect later", error: String(e) };
  }
  return flags.disabled ? { code: CLOSE.disabled, reason: DISABLED } : { bound, flags };
}

export const DISABLED = "the node is disabled";
export const REVOKED = "the agent token was revoked";

/** What an agent route asks before serving a node: the work itself, or the artifact a task of the node runs. */
export type Access = { kind: "task" | "build"; id: string } | { kind: "artifact"; buildId: string };

function holdsWork(queue: WorkQueue, nodeId: string, kind: "task" | "build", id: string): boolean {
  const w = queue.get(id);
  return w?.kind === kind && w.node === nodeId;
}

export function holds(queue: WorkQueue, sql: SqlStorage, nodeId: string, access: Access): boolean {
  if (access.kind !== "artifact") return holdsWork(queue, nodeId, access.kind, access.id);
  if (holdsWork(queue, nodeId, "build", access.buildId)) return true;
  // Tasks name their build only in the frame they are sent (the payload), which stays in storage.
  return sql.exec("select 1 from work where node = ? and kind = 'task' and json_extract(payload, '$.buildId') = ? limit 1", nodeId, access.buildId).toArray().length > 0;
}

/** Whether a report is about work the dispatcher assigned to the node that sent it (liveness frames always are). */
export function reportsOwnWork(queue: WorkQueue, nodeId: string, msg: AgentMessage): boolean {
  switch (msg.type) {
    case "task.done":
    case "task.log":
      return holdsWork(queue, nodeId, "task", msg.taskId);
    case "build.started":
    case "build.log":
    case "build.done":
      return holdsWork(queue, nodeId, "build", msg.buildId);
    default:
      return true;
  }
}

/**
 * Tokens revoked in the last minutes. A Worker isolate may admit a revoked token from its cache
 * for TOKEN_CACHE_MS; its connects stop here. Kept in storage so an eviction does not forget them.
 */
export class RevokedTokens {
  private static readonly KEEP_MS = 6 * TOKEN_CACHE_MS;

  constructor(private readonly sql: SqlStorage) {
    sql.exec("create table if not exists revoked_token (id text primary key, at integer not null)");
  }

  add(tokenId: string, now: number): void {
    this.sql.exec("delete from revoked_token where at < ?", now - RevokedTokens.KEEP_MS);
    this.sql.exec("insert or replace into revoked_token (id, at) values (?, ?)", tokenId, now);
  }

  has(tokenId: string): boolean {
    return this.sql.exec("select 1 from revoked_token where id = ?", tokenId).toArray().length > 0;
  }
}
