import { eq } from "drizzle-orm";
import type { z } from "zod";
import type { Db } from "../db/client.js";
import { nodes } from "../db/schema.js";
import type { hello } from "../../shared/protocol/messages.js";
import type { AgentState, NodeSocket } from "./agents.js";

/** The operator's word on a node (POST /v1/admin/nodes/<id>/drain, /resume, /disable). */
export interface NodeFlags {
  draining: boolean;
  disabled: boolean;
}

/** One connected node as one shard sees it. */
export interface FleetEntry {
  nodeId: string;
  agentVersion: string | null;
  runtime: string | null;
  slots: number;
  busy: number;
  langs: string[];
  privileged: boolean;
  egress: boolean;
  rttMs: number;
  connectedAt: number;
  lastSeen: number;
  draining: boolean;
}

/** Records a node's hello and returns the operator's flags for it, in one D1 round trip. */
export async function nodeHello(db: Db, h: z.infer<typeof hello>, now: number): Promise<NodeFlags> {
  const seen = { agentVersion: h.agentVersion ?? null, runtime: h.runtime ?? null, slots: h.slots, langs: h.langs, privileged: h.privileged, egress: h.egress === true, connectedAt: now, lastSeen: now };
  const [flags] = await db
    .insert(nodes)
    .values({ id: h.nodeId, ...seen, createdAt: now })
    .onConflictDoUpdate({ target: nodes.id, set: seen })
    .returning({ draining: nodes.draining, disabled: nodes.disabled });
  return flags!;
}

export async function nodeLeft(db: Db, nodeId: string, now: number): Promise<void> {
  await db.update(nodes).set({ lastSeen: now }).where(eq(nodes.id, nodeId));
}

type NodeAttachment = NodeSocket & AgentState;

/** An agent drains itself (SIGTERM) or is drained by the operator; either keeps new work away. */
export function setDraining<A extends NodeAttachment>(att: A, by: { agent?: boolean; operator?: boolean }): A {
  if (by.agent !== undefined) att.agentDraining = by.agent;
  if (by.operator !== undefined) att.operatorDraining = by.operator;
  att.draining = !!att.agentDraining || !!att.operatorDraining;
  return att;
}

/** What one shard sees of the nodes behind `sockets` (open, past hello). */
export const fleetOf = (sockets: WebSocket[], busy: (nodeId: string) => number): FleetEntry[] =>
  sockets.map((ws) => {
    const att = ws.deserializeAttachment() as NodeAttachment;
    return {
      nodeId: att.nodeId, agentVersion: att.agentVersion ?? null, runtime: att.runtime ?? null, slots: att.slots, busy: busy(att.nodeId), langs: att.langs,
      privileged: att.privileged, egress: att.egress ?? false, rttMs: att.rttMs, connectedAt: att.connectedAt, lastSeen: att.lastSeen, draining: att.draining,
    };
  });
