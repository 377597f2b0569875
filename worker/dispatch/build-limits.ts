import type { AgentState } from "./agents.js";
import type { WorkRow } from "./queue.js";

/**
 * Builds of one account running at once on a shard. A build holds a node's CPUs, memory and disk
 * for up to ten minutes: without a cap one account's burst of uploads takes every build slot of
 * the fleet, and everyone else's builds (and the tasks those nodes would run) wait behind it.
 */
export const MAX_BUILDS_PER_ACCOUNT = 2;

/** Waiting rows one pump considers (what queue.waiting() reads by default). */
const WINDOW = 200;

/**
 * One pump's view of the builds that run: per account, and per node against the node's own
 * maximum (`builds` in its hello). A build over either limit is skipped and stays queued, in its
 * place, until a build ends; tasks are never held back. Running builds are counted only when the
 * pump meets a waiting build, so a pump over tasks alone costs nothing extra.
 */
export class BuildLimits {
  private counts?: { account: Map<string, number>; node: Map<string, number> };

  constructor(
    private readonly agents: AgentState[],
    /** Every assigned row of the shard (tasks too; they are skipped). */
    private readonly running: () => Iterable<WorkRow>,
    private readonly perAccount = MAX_BUILDS_PER_ACCOUNT,
  ) {}

  /**
   * The pump's window on the waiting rows, with held builds left out: they take no room in it, so
   * a flood of one account's builds cannot push other accounts' work out of the pump's sight.
   * `waiting` must be lazy and unbounded.
   */
  *window(waiting: Iterable<WorkRow>, size = WINDOW): Iterable<WorkRow> {
    let n = 0;
    for (const w of waiting) {
      if (n >= size) return;
      if (w.kind === "build" && (this.accountFull(w) || this.eligible(w).length === 0)) continue;
      n++;
      yield w;
    }
  }

  /** The agents that may take `w` now: all of them for a task, none when its account is at its cap. */
  eligible(w: WorkRow): AgentState[] {
    if (w.kind !== "build") return this.agents;
    if (this.accountFull(w)) return [];
    const running = this.count().node;
    return this.agents.filter((a) => a.builds === undefined || (running.get(a.nodeId) ?? 0) < a.builds);
  }

  /** Counts an assignment this pump just made. */
  assigned(w: WorkRow, a: AgentState): void {
    if (w.kind !== "build") return;
    const counts = this.count();
    bump(counts.account, w.account_id);
    bump(counts.node, a.nodeId);
  }

  private accountFull(w: WorkRow): boolean {
    return (this.count().account.get(w.account_id) ?? 0) >= this.perAccount;
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
