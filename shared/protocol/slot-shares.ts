/**
 * How an agent's slots are divided between dispatcher shards. Every agent connects to every shard
 * and each shard assigns work up to the slots its hello offered, without knowing of the others: an
 * agent that offered each shard all its slots could be handed shards × slots tasks. So each shard
 * is offered a fixed share and the shares add up to the agent's slots. The agent offers it in its
 * hello (`slotsShared`); a shard takes the same share itself of an older agent's whole count.
 *
 * A fixed split rather than a lease that moves slots to the busy shard: moving a slot safely needs
 * the shard giving it up to confirm it will not assign into it any more (an assignment may be on
 * the wire while the lease shrinks), a round trip the protocol does not have. Tasks are spread over
 * shards uniformly at random, so a fixed split loses little.
 *
 * A node with fewer slots than shards still serves every shard (work on a shard no agent offers a
 * slot would wait forever): each shard gets at least one slot, so such a node may run up to
 * `shards` tasks at once. Run nodes with at least as many slots as shards to avoid that.
 */
export function slotShare(slots: number, shards: number, shard: number): number {
  if (slots <= 0) return 0; // draining: no shard may assign anything
  if (slots < shards) return 1;
  return Math.floor(slots / shards) + (shard < slots % shards ? 1 : 0);
}

/** The shard's free slots: its share less the work it assigned that still runs. */
export function freeInShard(slots: number, shards: number, shard: number, runningInShard: number): number {
  return Math.max(0, slotShare(slots, shards, shard) - runningInShard);
}
