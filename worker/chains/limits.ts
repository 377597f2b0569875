/** A chain stops after 10 hops from its first task (a self-trigger included). */
export const MAX_HOPS = 10;

/** A chain issues at most this many tasks after its first, in all (counted at its root's shard: places.ts). */
export const MAX_CHAIN_TASKS = 100;
