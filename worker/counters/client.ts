import type { Bindings } from "../env.js";
import type { EndpointCounter } from "./durable-object.js";

/** One counter object per endpoint: the atom of coordination is the endpoint's day. */
export const counterFor = (env: Bindings, endpointId: string): DurableObjectStub<EndpointCounter> =>
  env.ENDPOINT_COUNTER.get(env.ENDPOINT_COUNTER.idFromName(endpointId));
