import type { Db } from "./db/client.js";
import type { StoreBindings } from "./bindings.js";
import type { AgentCaller, Caller } from "./callers.js";

export type { AgentCaller, Caller };
import type { DispatcherRpc } from "./dispatch/rpc.js";
import type { EndpointCounter } from "./counters/durable-object.js";
import type { SyncWaitLeases } from "./counters/sync-waits.js";

export interface Bindings extends StoreBindings {
  DISPATCHER: DurableObjectNamespace<DispatcherRpc>;
  ENDPOINT_COUNTER: DurableObjectNamespace<EndpointCounter>;
  /** One lease counter per account: its synchronous waits on /gc (worker/counters/sync-waits.ts). */
  SYNC_WAITS: DurableObjectNamespace<SyncWaitLeases>;
  /**
   * One timer per schedule (worker/schedules/). Left untyped here, and typed where its stubs are
   * made (schedules/client.ts): the scheduler issues tasks through the dispatcher, whose code takes
   * these bindings, so naming its class here would tie the two in a circle of imports.
   */
  SCHEDULER: DurableObjectNamespace;
}

export interface Variables {
  db: Db;
  caller: Caller;
  agent: AgentCaller;
  requestId: string;
}

export type AppEnv = { Bindings: Bindings; Variables: Variables };
