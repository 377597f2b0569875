/**
 * The operator's grants that a task may need of its account: `privileged` (run as root, outside
 * gVisor) and `egress` (reach the network). Each is revocable.
 */
export const GRANTS = ["privileged", "egress"] as const;
export type Grant = (typeof GRANTS)[number];

/** What a queue row says of its needs (queue.ts WorkRow, or the part of it this file reads). */
export interface GrantedWork {
  kind: string;
  account_id: string;
  privileged: number | boolean;
  egress: number | boolean;
}

const needs: Record<Grant, (w: GrantedWork) => boolean> = { privileged: (w) => !!w.privileged, egress: (w) => !!w.egress };
/** One storage table a grant (`privilege_revoked` is older than egress and keeps its name). */
const TABLE: Record<Grant, string> = { privileged: "privilege_revoked", egress: "egress_revoked" };

/**
 * Accounts whose grants the operator revoked, as this shard was told. Revoking turns the need off
 * on the account's functions in D1 first, but a task created just before (its function read while
 * it still needed the grant) may reach the shard after: such work is refused here, so nothing of a
 * revoked account runs with the grant again. A new grant lifts it. Kept in storage so an eviction
 * does not forget; mirrored in memory for the enqueue path.
 */
export class RevokedGrants {
  private revoked = new Map<Grant, Set<string>>();

  constructor(private readonly sql: SqlStorage) {
    for (const g of GRANTS) sql.exec(`create table if not exists ${TABLE[g]} (account_id text primary key)`);
    this.reload();
  }

  reload(): void {
    for (const g of GRANTS) this.revoked.set(g, new Set(this.sql.exec<{ account_id: string }>(`select account_id from ${TABLE[g]}`).toArray().map((r) => r.account_id)));
  }

  set(grant: Grant, accountId: string, allowed: boolean): void {
    if (allowed) this.sql.exec(`delete from ${TABLE[grant]} where account_id = ?`, accountId);
    else this.sql.exec(`insert or ignore into ${TABLE[grant]} (account_id) values (?)`, accountId);
    if (allowed) this.revoked.get(grant)!.delete(accountId);
    else this.revoked.get(grant)!.add(accountId);
  }

  /** Whether this work needs `grant` and its account lost it. */
  lost(w: GrantedWork, grant: Grant): boolean {
    return w.kind === "task" && needs[grant](w) && this.revoked.get(grant)!.has(w.account_id);
  }

  /** The first grant this work needs that its account lost: it may not run. */
  refused(w: GrantedWork): Grant | undefined {
    return GRANTS.find((g) => this.lost(w, g));
  }
}
