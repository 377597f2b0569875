import type { RetryPolicy } from "../../shared/schemas/retry.js";

/**
 * A dispatcher's copy of its functions' retry policies, in its own storage (mirrored in memory):
 * the API writes D1 and then tells the function's shard (Dispatcher.policyChanged) before it
 * answers. Only policies that retry or dead-letter are kept; a function without one costs an
 * enqueue one map lookup.
 */
export class RetryPolicies {
  private policies = new Map<string, RetryPolicy>();

  constructor(private readonly sql: SqlStorage) {
    sql.exec("create table if not exists retry_policy (function_id text primary key, policy text not null)");
    this.reload();
  }

  reload(): void {
    this.policies = new Map(this.sql.exec<{ function_id: string; policy: string }>("select function_id, policy from retry_policy").toArray().map((r) => [r.function_id, JSON.parse(r.policy) as RetryPolicy]));
  }

  /** The function's policy when it retries or has a dead letter, else undefined. */
  get(functionId: string): RetryPolicy | undefined {
    return this.policies.get(functionId);
  }

  set(functionId: string, p: RetryPolicy | null): void {
    if (!p || (p.maxAttempts <= 1 && !p.deadLetterFunctionId)) {
      if (this.policies.delete(functionId)) this.sql.exec("delete from retry_policy where function_id = ?", functionId);
      return;
    }
    this.sql.exec("insert or replace into retry_policy (function_id, policy) values (?, ?)", functionId, JSON.stringify(p));
    this.policies.set(functionId, p);
  }
}
