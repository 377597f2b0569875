import type { Bindings } from "../env.js";
import { sqlBatch, type Db } from "../db/client.js";
import type { TaskRow } from "../db/rows.js";
import { fireTriggers, firesFor, triggerCandidate, triggerCandidates, type ChainParent, type ChainShards, type TriggerCandidate } from "./chain.js";
import { newTaskId } from "./client.js";

/** A finished task whose triggers are still to fire, and the ids drawn for the tasks they issue. */
interface Due {
  parent: ChainParent;
  /** Trigger id → the id of the task it issues: drawn once, so a firing run again issues the same tasks. */
  plan: Record<string, string>;
  /** The triggers as the commit read them; absent after a reload (read from D1 again then). */
  triggers?: TriggerCandidate[];
}

/**
 * Fires the triggers of finished tasks off the dispatcher's commit path, durably. The commit hands
 * its finished tasks over in the same synchronous step that drops their outcomes from the log, and
 * each task whose triggers match is stored here with the ids of the tasks they will issue; a
 * firing creates every stored task on its function's shard, then forgets them. An eviction or a
 * failed call anywhere in between leaves the rows, and the next instance (or the alarm's retry)
 * fires them again: a task already created is not created twice (its id was drawn once, and the
 * shard asked looks for it).
 */
export class ChainFiring {
  private pending: Due[] = [];
  private running: Promise<void> | undefined;
  /** A firing failed: the alarm tries the stored rows again. */
  failed = false;

  constructor(
    private readonly env: Bindings,
    private readonly db: Db,
    private readonly sql: SqlStorage,
    private readonly shards: ChainShards,
    private readonly onError: (e: unknown, taskIds: string[]) => void,
  ) {
    sql.exec("create table if not exists chain_due (parent_id text primary key, parent text not null, plan text not null)");
  }

  /** The tasks firings not yet finished will issue (or have issued and not yet queued). */
  planned(): Set<string> {
    return new Set(this.sql.exec<{ id: string }>("select json_each.value as id from chain_due, json_each(chain_due.plan)").toArray().map((r) => r.id));
  }

  /** Stores what the finished tasks' matching triggers issue, synchronously, then fires them. */
  add(finished: TaskRow[], triggers: TriggerCandidate[]): void {
    if (!finished.length || !triggers.length) return;
    const due: Due[] = [];
    for (const row of finished) {
      const parent = parentOf(row);
      const fires = firesFor(parent, triggers);
      if (!fires.length) continue;
      const plan = Object.fromEntries(fires.map((c) => [c.trigger.id, newTaskId(this.env, c.nextId)]));
      this.sql.exec("insert or ignore into chain_due (parent_id, parent, plan) values (?, ?, ?)", parent.id, JSON.stringify(parent), JSON.stringify(plan));
      due.push({ parent, plan, triggers });
    }
    this.fire(due);
  }

  /** Fires what storage holds, as a fresh instance must (and the alarm after a failed firing). */
  reload(): void {
    const stored = this.sql.exec<{ parent: string; plan: string }>("select parent, plan from chain_due").toArray();
    const held = new Set(this.pending.map((d) => d.parent.id));
    this.failed = false;
    this.fire(stored.map((r) => ({ parent: JSON.parse(r.parent) as ChainParent, plan: JSON.parse(r.plan) as Record<string, string> })).filter((d) => !held.has(d.parent.id)));
  }

  private fire(due: Due[]): void {
    if (!due.length) return;
    this.pending.push(...due);
    this.running ??= this.drain().finally(() => (this.running = undefined));
  }

  private async drain(): Promise<void> {
    while (this.pending.length) {
      const batch = this.pending.splice(0);
      const parents = batch.map((d) => d.parent);
      try {
        const triggers = await this.triggersOf(batch);
        const plan = new Map(batch.map((d) => [d.parent.id, d.plan]));
        // Stored rows brought back by reload() have no triggers: their firing may have run before.
        await fireTriggers(this.db, this.env.BUCKET, this.shards, parents, triggers, plan, batch.some((d) => !d.triggers));
        this.sql.exec("delete from chain_due where parent_id in (select value from json_each(?))", JSON.stringify(parents.map((p) => p.id)));
      } catch (e) {
        this.failed = true;
        this.onError(e, parents.map((p) => p.id));
      }
    }
  }

  /** The triggers a batch fires: as its commits read them, or read again for rows a reload brought back. */
  private async triggersOf(batch: Due[]): Promise<TriggerCandidate[]> {
    const known = batch.flatMap((d) => d.triggers ?? []);
    const reloaded = batch.filter((d) => !d.triggers);
    if (reloaded.length) {
      const [raw] = await sqlBatch(this.db, [triggerCandidates([...new Set(reloaded.map((d) => d.parent.functionId))])]);
      known.push(...raw!.map(triggerCandidate));
    }
    return [...new Map(known.map((t) => [t.trigger.id, t] as const)).values()];
  }
}

/** What firing needs of a finished task: no input, and its result only for includeResult. */
function parentOf(t: TaskRow): ChainParent {
  const { id, accountId, functionId, status, hop, chainId, resultBody, resultKey, resultHeaders } = t;
  return { id, accountId, functionId, status, hop, chainId, resultBody, resultKey, resultHeaders };
}
