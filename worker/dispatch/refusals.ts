import type { Db } from "../db/client.js";
import type { AgentState } from "./agents.js";
import { FleetReach, needsKey, needsOf, type SeenNode } from "./fleet-reach.js";
import type { TaskDone } from "./outcomes.js";
import { RevokedGrants, type Grant } from "./revoked-grants.js";
import type { WorkQueue, WorkRow } from "./queue.js";
import { grantRevokedReport, unreachableReport } from "./verdicts.js";

/** What the refusals need of their shard. */
export interface RefusalHost {
  queue: WorkQueue;
  /** The agents connected to the shard now. */
  agents(): AgentState[];
  /** Ends work with the dispatcher's own outcome, stopping it on its node if it runs there. */
  end(w: WorkRow, report: TaskDone): void;
  log(msg: string, extra: Record<string, unknown>): void;
}

/**
 * Tasks a shard ends instead of running or keeping: work that needs a grant (privileged, egress)
 * its account lost (403), and work no node of the fleet could ever take (503, see fleet-reach.ts). Each
 * method returns how many it ended; their outcomes are in the shard's log, for its next commit.
 */
export class Refusals {
  private readonly reach: FleetReach;
  private readonly revoked: RevokedGrants;

  constructor(db: Db, sql: SqlStorage, private readonly host: RefusalHost) {
    this.reach = new FleetReach(db);
    this.revoked = new RevokedGrants(sql);
  }

  /** Called before the pump that follows an enqueue, so that no agent is ever handed such work. */
  revokedWork(ids: string[]): number {
    const refused = this.waitingTasks(ids).filter((w) => this.revoked.refused(w));
    return this.endAll(refused, (w) => grantRevokedReport(this.revoked.refused(w)!, w.id), "task needing a revoked grant refused");
  }

  /** The operator granted or revoked a grant: a revocation ends the account's work that needs it, waiting or running. */
  grantChanged(grant: Grant, accountId: string, allowed: boolean): number {
    this.revoked.set(grant, accountId, allowed);
    if (allowed) return 0;
    const gone = this.host.queue.matching((w) => w.account_id === accountId && this.revoked.lost(w, grant));
    return this.endAll(gone, (w) => grantRevokedReport(grant, w.id), `task stopped: ${grant} grant revoked`);
  }

  /** Of these tasks, those still waiting that no node of the fleet could take. */
  async unreachable(ids: string[]): Promise<number> {
    const waiting = this.waitingTasks(ids);
    if (!waiting.length) return 0;
    let agents: AgentState[] | undefined;
    const connected = () => (agents ??= this.host.agents());
    // Verdicts per kind of need, so a batch of one function's tasks asks once.
    const verdicts = new Map<string, string | null>();
    const reasons = new Map<WorkRow, string>();
    try {
      for (const w of waiting) {
        const needs = needsOf(w);
        const key = needsKey(needs);
        if (!verdicts.has(key)) verdicts.set(key, await this.reach.unreachable(needs, connected, Date.now()));
        const reason = verdicts.get(key);
        if (reason) reasons.set(w, reason);
      }
    } catch (e) {
      // The nodes table could not be read: the tasks wait, as they did before the rule (the sweep judges again).
      this.host.log("judging tasks against the fleet failed; they wait", { error: String(e) });
      return 0;
    }
    // Anything assigned or ended while the nodes table was read is no longer this call's.
    const still = [...reasons.keys()].filter((w) => this.host.queue.get(w.id) === w && w.node === null);
    return this.endAll(still, (w) => unreachableReport(w.id, reasons.get(w)!), "task no node could take failed");
  }

  /**
   * Every waiting task, against the nodes table read afresh: tasks that waited for nodes last
   * seen more than 24 hours ago end now (the hourly sweep asks every shard).
   */
  async sweep(): Promise<number> {
    this.reach.forget();
    return this.unreachable(this.host.queue.matching((w) => w.kind === "task" && w.node === null).map((w) => w.id));
  }

  /** A node said hello to this shard: what it serves counts at once. */
  saw(nodeId: string, node: SeenNode): void {
    this.reach.saw(nodeId, node);
  }

  /** Storage was edited behind the shard's back (tests): read it again. */
  reload(): void {
    this.revoked.reload();
    this.reach.forget();
  }

  private waitingTasks(ids: string[]): WorkRow[] {
    return ids.flatMap((id) => {
      const w = this.host.queue.get(id);
      return w && w.kind === "task" && w.node === null ? [w] : [];
    });
  }

  private endAll(rows: WorkRow[], report: (w: WorkRow) => TaskDone, msg: string): number {
    for (const w of rows) this.host.end(w, report(w));
    if (rows.length) this.host.log(msg, { taskIds: rows.map((w) => w.id).slice(0, 20), count: rows.length });
    return rows.length;
  }
}
