import type { Db } from "../db/client.js";
import { chainTasks } from "../task-history/counts.js";
import { MAX_CHAIN_TASKS } from "./limits.js";

/** A chain untouched this long is forgotten here; should it go on, D1 (which has all its rows by then) counts it again. */
const FORGET_AFTER_MS = 7 * 24 * 3600_000;
const SWEEP_EVERY_MS = 3600_000;

/**
 * The places of the chains rooted on this shard (MAX_CHAIN_TASKS each). A chain's tasks are
 * created on the shards of their functions, in any order and any number at once, and D1 gets them
 * later: only one place can count them exactly, and it is the shard of the chain's first task
 * (its id names the shard). Every firing asks it for places before creating its tasks.
 *
 * A place is kept by task id, so a firing run again (after an eviction, a failed write) is given
 * the places it had and takes no new one. A chain whose root fires is new: it starts at zero. A
 * deeper chain this shard does not know (begun before places were kept here, or forgotten) starts
 * from D1's count of its tasks, live and archived, read once.
 */
export class ChainPlaces {
  private readonly seeding = new Map<string, Promise<void>>();
  private sweptAt = 0;

  constructor(
    private readonly sql: SqlStorage,
    private readonly db: Db,
  ) {
    sql.exec("create table if not exists chain_seed (chain_id text primary key, seeded integer not null, at integer not null)");
    sql.exec("create table if not exists chain_place (chain_id text not null, task_id text not null, primary key (chain_id, task_id))");
  }

  /**
   * Places for these tasks of the chain, in order, while it has room: the ids given one (now or
   * by an earlier call). `fresh`: the chain's root is the parent, so the chain has no task yet.
   */
  async reserve(chainId: string, taskIds: string[], fresh: boolean, now: number): Promise<string[]> {
    this.sweep(now);
    if (!this.known(chainId)) await this.seed(chainId, fresh, now);
    // From here to the end, no await: concurrent firings of one chain take places one at a time.
    const placed = new Set(this.sql.exec<{ task_id: string }>("select task_id from chain_place where chain_id = ?", chainId).toArray().map((r) => r.task_id));
    const { seeded } = this.sql.exec<{ seeded: number }>("select seeded from chain_seed where chain_id = ?", chainId).one();
    let taken = seeded + placed.size;
    const granted: string[] = [];
    for (const id of taskIds) {
      if (!placed.has(id)) {
        if (taken >= MAX_CHAIN_TASKS) continue;
        this.sql.exec("insert into chain_place (chain_id, task_id) values (?, ?)", chainId, id);
        placed.add(id);
        taken++;
      }
      granted.push(id);
    }
    this.sql.exec("update chain_seed set at = ? where chain_id = ?", now, chainId);
    return granted;
  }

  /** Places given to tasks that were not created after all (their function refused them): free again. */
  release(chainId: string, taskIds: string[]): void {
    this.sql.exec("delete from chain_place where chain_id = ? and task_id in (select value from json_each(?))", chainId, JSON.stringify(taskIds));
  }

  private known(chainId: string): boolean {
    return this.sql.exec("select 1 from chain_seed where chain_id = ?", chainId).toArray().length > 0;
  }

  private seed(chainId: string, fresh: boolean, now: number): Promise<void> {
    let seeding = this.seeding.get(chainId);
    if (!seeding) {
      seeding = (async () => {
        const seeded = fresh ? 0 : await chainTasks(this.db, chainId);
        this.sql.exec("insert or ignore into chain_seed (chain_id, seeded, at) values (?, ?, ?)", chainId, seeded, now);
      })().finally(() => this.seeding.delete(chainId));
      this.seeding.set(chainId, seeding);
    }
    return seeding;
  }

  private sweep(now: number): void {
    if (now - this.sweptAt < SWEEP_EVERY_MS) return;
    this.sweptAt = now;
    this.sql.exec("delete from chain_place where chain_id in (select chain_id from chain_seed where at < ?)", now - FORGET_AFTER_MS);
    this.sql.exec("delete from chain_seed where at < ?", now - FORGET_AFTER_MS);
  }
}
