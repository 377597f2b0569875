import type { Db } from "./db/client.js";
import type { StoreBindings } from "./bindings.js";
import type { AgentCaller, Caller } from "./callers.js";

export type { AgentCaller, Caller };
import type { Dispatcher } from "./dispatch/durable-object.js";
import type { EndpointCounter } from "./counters/durable-object.js";
import type { SyncWaitLeases } from "./counters/sync-waits.js";
import type { Scheduler } from "./schedules/durable-object.js";

export interface Bindings extends StoreBindings {
  DISPATCHER: DurableObjectNamespace<Dispatcher>;
  ENDPOINT_COUNTER: DurableObjectNamespace<EndpointCounter>;
  /** One lease counter per account: its synchronous waits on /gc (worker/counters/sync-waits.ts). */
  SYNC_WAITS: DurableObjectNamespace<SyncWaitLeases>;
  /** One timer per schedule (worker/schedules/). */
  SCHEDULER: DurableObjectNamespace<Scheduler>;
}

export interface Variables {
  db: Db;
  caller: Caller;
  agent: AgentCaller;
  requestId: string;
}

export type AppEnv = { Bindings: Bindings; Variables: Variables };
