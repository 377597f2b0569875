import type { Bindings } from "../env.js";
import type { EndpointCounter } from "./durable-object.js";
import type { SyncWaitLeases } from "./sync-waits.js";

/** One counter object per endpoint: the atom of coordination is the endpoint's day. */
export const counterFor = (env: Bindings, endpointId: string): DurableObjectStub<EndpointCounter> =>
  env.ENDPOINT_COUNTER.get(env.ENDPOINT_COUNTER.idFromName(endpointId));

/** One lease counter per account: the atom of coordination is the account's open synchronous waits. */
export const syncWaitsFor = (env: Pick<Bindings, "SYNC_WAITS">, accountId: string): DurableObjectStub<SyncWaitLeases> =>
  env.SYNC_WAITS.get(env.SYNC_WAITS.idFromName(accountId));
