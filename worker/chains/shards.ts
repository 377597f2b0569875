import type { Bindings } from "../env.js";
import { shardOfTask, shardStub } from "../dispatch/client.js";
import type { ChainShards } from "../dispatch/chain.js";
import { createInShard, type AskingShard } from "../task-life/create-in-shard.js";
import type { ChainPlaces } from "./places.js";

/**
 * How one shard's firings reach the others: a chain's places at the shard its root's id names,
 * each task at its function's shard, and this shard's own by direct call.
 */
export function chainShards(env: Bindings, from: AskingShard, places: ChainPlaces): ChainShards {
  const root = (chainId: string) => shardStub(env, shardOfTask(env, chainId));
  return {
    reserve: (chainId, taskIds, fresh) => {
      const stub = root(chainId);
      return stub.id.equals(from.id) ? places.reserve(chainId, taskIds, fresh, Date.now()) : stub.reserveChainPlaces(chainId, taskIds, fresh);
    },
    release: async (chainId, taskIds) => {
      const stub = root(chainId);
      if (stub.id.equals(from.id)) places.release(chainId, taskIds);
      else await stub.releaseChainPlaces(chainId, taskIds);
    },
    create: (functionId, o, staged, mayExist) => createInShard(env, from, { ...o, functionId, staged, now: Date.now(), mayExist }),
  };
}
