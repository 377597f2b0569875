import type { Db } from "../db/client.js";
import { isStorageUnavailable } from "../db/unavailable.js";
import { readDoorFacts, type DoorFacts } from "./facts.js";

/** What the endpoint's object answers the door; data, so that it crosses the RPC as it is. */
export type DoorAnswer = { facts: DoorFacts } | { missing: true } | { unavailable: true };

/**
 * Facts older than this are answered all the same while one read of D1 runs behind them: a safety
 * net for a change whose notice never arrived (the writer's notice failed after its D1 write, and
 * its API call answered that error). Every writer notifies (endpoint-door/notify.ts), so this is
 * not what keeps the door right; it is long because each busy endpoint pays one D1 query per
 * period, and a minute would make that the D1 load this design takes off the path.
 */
export const DOOR_REFRESH_MS = 5 * 60_000;

interface Held {
  /** null: the endpoint existed and is gone (a tombstone; ids are never reused). */
  facts: DoorFacts | null;
  loadedAt: number;
}

/**
 * One endpoint's door facts, kept in its EndpointCounter's SQLite storage (docs/dispatch.md,
 * "The public door"), so that they outlive evictions and D1 outages: a call is answered from here
 * with no D1 query, and keeps being answered while D1 fails. D1 is read on the first call, in the
 * background once the facts are DOOR_REFRESH_MS old, and right after a change. A change forgets
 * the facts before its API call answers, and a read that began before a change is not kept (the
 * generation), so nothing stale is served once the change's API call returned.
 *
 * An id that was never an endpoint is not remembered: anyone can probe /gc/<anything>, and each
 * probe must not leave storage behind. Only a known endpoint's deletion leaves its tombstone.
 */
export class DoorBook {
  private held: Held | undefined;
  private loading: Promise<DoorAnswer> | undefined;
  private generation = 0;

  constructor(
    private readonly sql: SqlStorage,
    private readonly db: () => Db,
    private readonly refreshMs = DOOR_REFRESH_MS,
  ) {
    sql.exec("create table if not exists door (endpoint_id text primary key, facts text, loaded_at integer not null)");
  }

  async answer(endpointId: string, now = Date.now()): Promise<DoorAnswer> {
    const held = this.read(endpointId);
    if (held) {
      if (!held.facts) return { missing: true };
      if (now - held.loadedAt >= this.refreshMs && !this.loading) void this.reload(endpointId, now).catch(() => undefined);
      return { facts: held.facts };
    }
    return this.loading ?? this.reload(endpointId, now);
  }

  /** The endpoint, its function's pause or its account's limits changed: forget, and read D1 again now. */
  changed(endpointId: string, now = Date.now()): void {
    this.forget();
    this.sql.exec("delete from door where endpoint_id = ?", endpointId);
    // The writer's change is committed in D1, so a read now is the new truth; the next call need not wait for it.
    void this.reload(endpointId, now).catch(() => undefined);
  }

  /** The endpoint (or its function) was deleted: every later call answers 404 without asking D1. */
  gone(endpointId: string, now = Date.now()): void {
    this.forget();
    this.keep(endpointId, { facts: null, loadedAt: now });
  }

  private forget(): void {
    this.generation++;
    this.held = undefined;
    this.loading = undefined;
  }

  private read(endpointId: string): Held | undefined {
    if (this.held) return this.held;
    const row = this.sql.exec<{ facts: string | null; loaded_at: number }>("select facts, loaded_at from door where endpoint_id = ?", endpointId).toArray()[0];
    if (row) this.held = { facts: row.facts === null ? null : (JSON.parse(row.facts) as DoorFacts), loadedAt: row.loaded_at };
    return this.held;
  }

  private keep(endpointId: string, held: Held): void {
    this.held = held;
    this.sql.exec(
      "insert into door (endpoint_id, facts, loaded_at) values (?, ?, ?) on conflict(endpoint_id) do update set facts = excluded.facts, loaded_at = excluded.loaded_at",
      endpointId,
      held.facts === null ? null : JSON.stringify(held.facts),
      held.loadedAt,
    );
  }

  /** One read of D1; its answer is kept only if no change came in meanwhile. D1 out of reach keeps what is held. */
  private reload(endpointId: string, now: number): Promise<DoorAnswer> {
    const loading: Promise<DoorAnswer> = this.readD1(endpointId, now, this.generation).finally(() => {
      if (this.loading === loading) this.loading = undefined;
    });
    this.loading = loading;
    return loading;
  }

  private async readD1(endpointId: string, now: number, generation: number): Promise<DoorAnswer> {
    let facts: DoorFacts | null;
    try {
      facts = await readDoorFacts(this.db(), endpointId);
    } catch (err) {
      if (isStorageUnavailable(err)) return { unavailable: true };
      throw err;
    }
    if (generation === this.generation) {
      // A known endpoint that D1 no longer has was deleted (its notice lost): remembered as gone.
      if (facts) this.keep(endpointId, { facts, loadedAt: now });
      else if (this.held) this.keep(endpointId, { facts: null, loadedAt: now });
    }
    return facts ? { facts } : { missing: true };
  }
}
