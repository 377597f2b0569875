import type { Db } from "./db/client.js";
import type { Dispatcher } from "./dispatch/durable-object.js";
import type { EndpointCounter } from "./counters/durable-object.js";
import type { SyncWaitLeases } from "./counters/sync-waits.js";
import type { Scheduler } from "./schedules/durable-object.js";

export interface Bindings {
  DB: D1Database;
  BUCKET: R2Bucket;
  DISPATCHER: DurableObjectNamespace<Dispatcher>;
  ENDPOINT_COUNTER: DurableObjectNamespace<EndpointCounter>;
  /** One lease counter per account: its synchronous waits on /gc (worker/counters/sync-waits.ts). */
  SYNC_WAITS: DurableObjectNamespace<SyncWaitLeases>;
  /** One timer per schedule (worker/schedules/). */
  SCHEDULER: DurableObjectNamespace<Scheduler>;
  /** How many dispatcher shards functions are spread over (default 1); see docs/dispatch.md. */
  DISPATCH_SHARDS?: string;
  /** The plans, a JSON array (see worker/billing/plans.ts). */
  PLANS?: string;
  /** Unfinished tasks one account may hold (default 1000); see services/admission.ts. */
  MAX_PENDING_TASKS?: string;
  /**
   * Defaults of what one account may hold, a JSON object with any of schedules, queuedBuilds,
   * artifactsKept, syncWaits (worker/limits/account-limits.ts); each may be changed per account.
   */
  ACCOUNT_LIMITS?: string;
  /** Days a finished task's input, result and log are kept (default 30); see services/retention.ts. */
  TASK_RETENTION_DAYS?: string;
  /** Shared secret of the payment provider's signed webhook. */
  BILLING_WEBHOOK_SECRET?: string;
  /**
   * Key material for function secrets at rest (worker/function-config/secret-box.ts): a Worker
   * secret (`wrangler secret put SECRETS_KEY`), `.dev.vars` locally. Without it secrets cannot be set or run.
   */
  SECRETS_KEY?: string;
  /** Operator secret for /v1/admin routes (a Worker secret; `.dev.vars` locally). */
  ADMIN_TOKEN?: string;
  /** "1" counts what requests cost, for bench/cost.ts (worker/diagnostics/cost-counters.ts); never set in production. */
  COST_COUNTERS?: string;
  /** Milliseconds added before every D1 round trip, emulating a far primary (worker/db/d1-trouble.ts); unset in wrangler.toml. */
  D1_DELAY_MS?: string;
  /** "1" lets the local stack's tests make D1 fail for a while (POST /__test/d1); never set in a deployment. */
  D1_TEST_FAILURES?: string;
}

export interface Caller {
  accountId: string;
  tokenId: string;
}

/** Who calls an agent route: the node its token is bound to. */
export interface AgentCaller {
  nodeId: string;
  tokenId: string;
}

export interface Variables {
  db: Db;
  caller: Caller;
  agent: AgentCaller;
  requestId: string;
}

export type AppEnv = { Bindings: Bindings; Variables: Variables };
