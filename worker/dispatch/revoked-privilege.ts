/**
 * Accounts whose grant to run privileged functions the operator revoked, as this shard was told.
 * Revoking clears the flag on the account's functions in D1 first, but a task created just before
 * (its function read while still privileged) may reach the shard after: such work is refused
 * here, so nothing of a revoked account runs privileged again. A new grant lifts it. Kept in
 * storage so an eviction does not forget; mirrored in memory for the enqueue path.
 */
export class RevokedPrivilege {
  private accounts = new Set<string>();

  constructor(private readonly sql: SqlStorage) {
    sql.exec("create table if not exists privilege_revoked (account_id text primary key)");
    this.reload();
  }

  reload(): void {
    this.accounts = new Set(this.sql.exec<{ account_id: string }>("select account_id from privilege_revoked").toArray().map((r) => r.account_id));
  }

  set(accountId: string, allowed: boolean): void {
    if (allowed) this.sql.exec("delete from privilege_revoked where account_id = ?", accountId);
    else this.sql.exec("insert or ignore into privilege_revoked (account_id) values (?)", accountId);
    if (allowed) this.accounts.delete(accountId);
    else this.accounts.add(accountId);
  }

  /** Whether this work may not run: privileged, of an account whose grant was revoked. */
  refuses(w: { privileged: number | boolean; kind: string; account_id: string }): boolean {
    return w.kind === "task" && !!w.privileged && this.accounts.has(w.account_id);
  }
}
