import type { WorkRow } from "./work-rows.js";

/** Oldest first: enqueue time, then id (ids drawn in one instant are monotonic). */
const older = (a: WorkRow, b: WorkRow) => a.enqueued_at < b.enqueued_at || (a.enqueued_at === b.enqueued_at && a.id < b.id);

/** Where `w` belongs in `rows` (oldest first): binary search, so a requeued row keeps its place. */
function position(rows: WorkRow[], w: WorkRow): number {
  let lo = 0;
  let hi = rows.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (older(rows[mid]!, w)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Accounts whose last service is remembered. Forgetting the one served longest ago changes
 * nothing: it would be first in line anyway, as an account never served is.
 */
const REMEMBERED_ACCOUNTS = 10_000;

/** One function's waiting work of one kind: a pause holds back all of it or none. */
const laneOf = (w: WorkRow) => `${w.kind}:${w.function_id}`;

/**
 * The dispatcher's waiting work, arranged so that one account's backlog cannot hold another
 * account's work behind it: work waits in lanes (one per account, function and kind, oldest
 * first), and a pump visits accounts round-robin — the account served longest ago first — taking
 * each one's oldest unheld row in turn. An account with 10,000 queued tasks and one with a single
 * task each get the next free slot alternately; within an account, work keeps its FIFO order.
 *
 * Reading the next candidate costs a look at each lane head of an account, never a scan of the
 * queue: a pump reads only the rows it is about to offer to agents. Memory only; the queue
 * (queue.ts) keeps it in step with storage, and rebuilds it from storage's waiting-row index.
 */
export class FairQueue {
  private readonly accounts = new Map<string, Map<string, WorkRow[]>>();
  /**
   * When each account was last served, on a counter, in that order (absent: never). Kept after an
   * account's waiting work drains: a backlog issued one task at a time must not look new each time.
   */
  private readonly lastServed = new Map<string, number>();
  private clock = 0;
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** Empties the lanes (to be filled again from storage); who was served when stays known. */
  clear(): void {
    this.accounts.clear();
    this.count = 0;
  }

  add(w: WorkRow): void {
    let lanes = this.accounts.get(w.account_id);
    if (!lanes) this.accounts.set(w.account_id, (lanes = new Map()));
    const key = laneOf(w);
    const rows = lanes.get(key);
    if (!rows) lanes.set(key, [w]);
    else if (older(rows.at(-1)!, w)) rows.push(w); // the usual case: newest last
    else rows.splice(position(rows, w), 0, w);
    this.count++;
  }

  delete(w: WorkRow): void {
    const lanes = this.accounts.get(w.account_id);
    const key = laneOf(w);
    const rows = lanes?.get(key);
    if (!lanes || !rows) return;
    const i = position(rows, w);
    if (rows[i]?.id !== w.id) return;
    rows.splice(i, 1);
    this.count--;
    if (rows.length) return;
    lanes.delete(key);
    if (lanes.size) return;
    this.accounts.delete(w.account_id);
  }

  /** An account's work was just assigned: it goes behind every account that waits for its turn. */
  served(accountId: string): void {
    this.lastServed.delete(accountId);
    this.lastServed.set(accountId, ++this.clock);
    if (this.lastServed.size > REMEMBERED_ACCOUNTS) this.lastServed.delete(this.lastServed.keys().next().value!);
  }

  /**
   * Waiting work in the order it should be offered: round after round over the accounts (served
   * longest ago first, then oldest work first), each round offering every account its oldest row
   * not yet offered. Rows that `held` says must wait are skipped with their whole lane, from the
   * row it first says so of (asked of each lane's next row as the order goes). At most
   * `limit` rows are offered, so a pump that finds no agent for any of them stops early.
   */
  *order(held: (w: WorkRow) => boolean, limit: number): Iterable<WorkRow> {
    const ring: { account: string; lanes: { rows: WorkRow[]; at: number }[]; head: WorkRow }[] = [];
    for (const [account, lanes] of this.accounts) {
      const open = [...lanes.values()].filter((rows) => !held(rows[0]!)).map((rows) => ({ rows, at: 0 }));
      if (!open.length) continue;
      const head = open.reduce((a, l) => (older(l.rows[0]!, a) ? l.rows[0]! : a), open[0]!.rows[0]!);
      ring.push({ account, lanes: open, head });
    }
    ring.sort((a, b) => (this.lastServed.get(a.account) ?? 0) - (this.lastServed.get(b.account) ?? 0) || (older(a.head, b.head) ? -1 : 1));
    let offered = 0;
    while (ring.length) {
      for (let i = 0; i < ring.length; ) {
        let next: { rows: WorkRow[]; at: number } | undefined;
        for (const l of ring[i]!.lanes) {
          // Asked again as the pump goes: a lane may become held by what the pump took (a concurrency cap).
          if (l.at < l.rows.length && l.at > 0 && held(l.rows[l.at]!)) l.at = l.rows.length;
          if (l.at < l.rows.length && (!next || older(l.rows[l.at]!, next.rows[next.at]!))) next = l;
        }
        if (!next) {
          ring.splice(i, 1);
          continue;
        }
        if (offered++ >= limit) return;
        yield next.rows[next.at++]!;
        i++;
      }
    }
  }
}
