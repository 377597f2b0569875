import type { WorkRow } from "../dispatch/queue.js";

/**
 * A dispatcher's copy of its functions' concurrency caps, in its own storage (mirrored in memory):
 * the API writes D1, then tells the function's shard (Dispatcher.policyChanged) before it answers.
 * Every task of a function is dispatched by one shard (dispatch/client.ts), so counting its
 * running tasks here counts them across the fleet.
 */
export class ConcurrencyCaps {
  private caps = new Map<string, number>();

  constructor(private readonly sql: SqlStorage) {
    sql.exec("create table if not exists concurrency_cap (function_id text primary key, max integer not null)");
    this.reload();
  }

  reload(): void {
    this.caps = new Map(this.sql.exec<{ function_id: string; max: number }>("select function_id, max from concurrency_cap").toArray().map((r) => [r.function_id, r.max]));
  }

  get(functionId: string): number | undefined {
    return this.caps.get(functionId);
  }

  set(functionId: string, max: number | null): void {
    if (max === null) {
      if (this.caps.delete(functionId)) this.sql.exec("delete from concurrency_cap where function_id = ?", functionId);
      return;
    }
    this.sql.exec("insert or replace into concurrency_cap (function_id, max) values (?, ?)", functionId, max);
    this.caps.set(functionId, max);
  }

  /**
   * One pump's gate: the running tasks of capped functions counted once, then each task the pump
   * assigns. Undefined when no function here has a cap, so the uncapped pump does no more than before.
   */
  gate(running: Iterable<WorkRow>): CapGate | undefined {
    if (!this.caps.size) return undefined;
    const counts = new Map<string, number>();
    for (const w of running) if (w.kind === "task" && this.caps.has(w.function_id)) counts.set(w.function_id, (counts.get(w.function_id) ?? 0) + 1);
    return new CapGate(this.caps, counts);
  }
}

export class CapGate {
  constructor(
    private readonly caps: ReadonlyMap<string, number>,
    private readonly counts: Map<string, number>,
  ) {}

  /** The function has as many tasks running as its cap: its waiting tasks wait (the queue skips its lane, not others'). */
  readonly held = (w: WorkRow): boolean => {
    const cap = w.kind === "task" ? this.caps.get(w.function_id) : undefined;
    return cap !== undefined && (this.counts.get(w.function_id) ?? 0) >= cap;
  };

  took(w: WorkRow): void {
    if (w.kind === "task" && this.caps.has(w.function_id)) this.counts.set(w.function_id, (this.counts.get(w.function_id) ?? 0) + 1);
  }
}
