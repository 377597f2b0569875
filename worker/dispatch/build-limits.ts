import type { AgentState } from "./agents.js";
import type { WorkRow } from "./queue.js";

/**
 * Builds of one account running at once on a shard. A build holds a node's CPUs, memory and disk
 * for up to ten minutes: without a cap one account's burst of uploads takes every build slot of
 * the fleet, and everyone else's builds (and the tasks those nodes would run) wait behind it.
 */
export const MAX_BUILDS_PER_ACCOUNT = 2;

/**
 * One pump's view of the builds that run: per account, and per node against the node's own
 * maximum (`builds` in its hello). A build over either limit is skipped and stays queued, in its
 * place, until a build ends; tasks are never held back. Running builds are counted only when the
 * pump meets a waiting build, so a pump over tasks alone costs nothing extra.
 */
export class BuildLimits {
  private counts?: { account: Map<string, number>; node: Map<string, number> };

  constructor(
    /** Every assigned row of the shard (tasks too; they are skipped). */
    private readonly running: () => Iterable<WorkRow>,
    private readonly perAccount = MAX_BUILDS_PER_ACCOUNT,
  ) {}

  /** The agents that may take `w` now: all of them for a task, none when its account is at its cap. */
  eligible(agents: AgentState[], w: WorkRow): AgentState[] {
    if (w.kind !== "build") return agents;
    const counts = this.count();
    if ((counts.account.get(w.account_id) ?? 0) >= this.perAccount) return [];
    return agents.filter((a) => a.builds === undefined || (counts.node.get(a.nodeId) ?? 0) < a.builds);
  }

  /** Counts an assignment this pump just made. */
  assigned(w: WorkRow, a: AgentState): void {
    if (w.kind !== "build" || !this.counts) return;
    bump(this.counts.account, w.account_id);
    bump(this.counts.node, a.nodeId);
  }

  private count() {
    if (!this.counts) {
      this.counts = { account: new Map(), node: new Map() };
      for (const w of this.running()) {
        if (w.kind !== "build" || w.node === null) continue;
        bump(this.counts.account, w.account_id);
        bump(this.counts.node, w.node);
      }
    }
    return this.counts;
  }
}

function bump(m: Map<string, number>, key: string) {
  m.set(key, (m.get(key) ?? 0) + 1);
}
