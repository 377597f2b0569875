import { asc, eq } from "drizzle-orm";
import type { z } from "zod";
import type { Bindings } from "../env.js";
import type { Db } from "../db/client.js";
import { nodes } from "../db/schema.js";
import { notFound } from "../errors.js";
import { iso } from "../lib/time.js";
import { allShards } from "../dispatch/client.js";
import type { FleetEntry, NodeFlags } from "../dispatch/fleet.js";
import type { fleetNode } from "../../shared/schemas/responses.js";

type FleetNode = z.infer<typeof fleetNode>;

/** One node's connections, one per shard, seen as one node: work is counted per shard, the rest is the node's. */
function merge(entries: FleetEntry[]) {
  return {
    busySlots: entries.reduce((n, e) => n + e.busy, 0),
    rttMs: Math.max(...entries.map((e) => e.rttMs)),
    connectedAt: Math.min(...entries.map((e) => e.connectedAt)),
    lastSeen: Math.max(...entries.map((e) => e.lastSeen)),
    draining: entries.some((e) => e.draining),
  };
}

/** Every node that has said hello, by id: D1 keeps what each last reported, the shards what is live now. */
export async function listNodes(db: Db, env: Bindings): Promise<FleetNode[]> {
  const [rows, shards] = await Promise.all([db.select().from(nodes).orderBy(asc(nodes.id)), Promise.all(allShards(env).map((s) => s.fleet()))]);
  const live = new Map<string, FleetEntry[]>();
  for (const e of shards.flat()) live.set(e.nodeId, [...(live.get(e.nodeId) ?? []), e]);
  return rows.map((r) => {
    const entries = live.get(r.id);
    const now = entries && merge(entries);
    const last = entries?.at(-1);
    return {
      id: r.id,
      agentVersion: last ? last.agentVersion : r.agentVersion,
      runtime: last ? last.runtime : r.runtime,
      connected: !!now,
      slots: last ? last.slots : r.slots,
      busySlots: now?.busySlots ?? 0,
      langs: last ? last.langs : r.langs,
      privileged: last ? last.privileged : r.privileged,
      egress: last ? last.egress : r.egress,
      rttMs: now?.rttMs ?? null,
      connectedSince: iso(now?.connectedAt),
      lastSeen: iso(now?.lastSeen ?? r.lastSeen),
      draining: r.draining || !!now?.draining,
      disabled: r.disabled,
    };
  });
}

/** Stores the operator's flags and tells every shard, which acts on the node's live sockets at once. */
export async function setNodeFlags(db: Db, env: Bindings, nodeId: string, change: Partial<NodeFlags>): Promise<void> {
  const [flags] = await db.update(nodes).set(change).where(eq(nodes.id, nodeId)).returning({ draining: nodes.draining, disabled: nodes.disabled });
  if (!flags) throw notFound("node");
  await Promise.all(allShards(env).map((s) => s.nodeChanged(nodeId, flags)));
}
