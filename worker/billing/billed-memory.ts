/**
 * Memory billed for a task that asked for the node's default (memSize 0). Tasks are metered (one
 * usage row each, keyed by task id, cancelled ones not) in the batch that records their outcomes:
 * see outcomesWritten() in dispatch/records.ts. A module of its own, so that what meters and what
 * reads usage both take it without importing each other.
 */
export const DEFAULT_BILLED_MEM_MIB = 256;
