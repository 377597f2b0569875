import { and, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { builds } from "../db/schema.js";
import type { Bindings } from "../env.js";
import { currentTaskCounts } from "../task-life/held-reads.js";
import { shardCount, shardStub } from "../dispatch/client.js";
import type { PlatformMetrics } from "../../shared/schemas/responses.js";

/** What one shard knows of an agent: its slots and how many of them hold this shard's work. */
interface ShardAgent {
  nodeId: string;
  slots: number;
  busy: number;
}

/**
 * The fleet as the original service's `/v1/metrics` reports it: every connected node once
 * (a node holds a socket per shard); busy when its work across shards fills its slots.
 */
export function fleetCounts(shards: { agents: ShardAgent[] }[]): Pick<PlatformMetrics, "activeNodes" | "busyNodes" | "freeNodes"> {
  const nodes = new Map<string, { slots: number; busy: number }>();
  for (const shard of shards)
    for (const a of shard.agents) {
      const n = nodes.get(a.nodeId) ?? { slots: a.slots, busy: 0 };
      n.slots = Math.max(n.slots, a.slots);
      n.busy += a.busy;
      nodes.set(a.nodeId, n);
    }
  const busyNodes = [...nodes.values()].filter((n) => n.busy >= n.slots).length;
  return { activeNodes: nodes.size, busyNodes, freeNodes: nodes.size - busyNodes };
}

/** The caller's tasks and builds (pending, today, completed) and the fleet's nodes. */
export async function platformMetrics(db: Db, env: Bindings, accountId: string, now = Date.now()): Promise<PlatformMetrics> {
  const [[t], [b], shards] = await Promise.all([
    currentTaskCounts(env, db, { accountId }, now, { week: false }).then((c) => [{ pendingTasks: c.pending, todayTasks: c.today, completedTasks: c.total - c.pending }]),
    db
      .select({ pendingBuilds: sql<number>`count(*)` })
      .from(builds)
      .where(and(eq(builds.accountId, accountId), inArray(builds.status, ["PENDING", "BUILDING"]))),
    Promise.all(Array.from({ length: shardCount(env) }, (_, i) => shardStub(env, i).status())),
  ]);
  return {
    pendingTasks: t?.pendingTasks ?? 0,
    pendingBuilds: b?.pendingBuilds ?? 0,
    ...fleetCounts(shards),
    todayTasks: t?.todayTasks ?? 0,
    completedTasks: t?.completedTasks ?? 0,
  };
}
