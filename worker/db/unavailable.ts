import { ApiError } from "../errors.js";

/**
 * D1's errors that mean "not reachable right now, ask again" rather than "this statement is wrong":
 * the transient ones D1's documentation tells callers to retry (a lost connection, an overloaded or
 * reset database, a storage timeout). drizzle wraps a driver error in its own (`cause`), and a
 * Durable Object's RPC carries only the message, so the whole chain is read by message.
 */
const TRANSIENT = [
  /Network connection lost/i,
  /D1 DB is overloaded/i,
  /transient issue/i,
  /storage (operation|caused object to be reset)/i,
  /exceeded timeout/i,
  /object to be reset|object was reset/i,
  /Internal error in D1 DB storage/i,
  /temporarily unavailable/i,
  // A Durable Object out of reach for a moment (a dispatcher shard a read needs): its RPC fails
  // with these, which Cloudflare's documentation marks retryable too.
  /Durable Object is overloaded/i,
  /reset because its code was updated/i,
];

/** Seconds a client should wait before asking again while D1 is unreachable. */
export const STORAGE_RETRY_AFTER_S = 5;

export function isStorageUnavailable(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++)
    if (TRANSIENT.some((re) => re.test(e instanceof Error ? e.message : ""))) return true;
  return false;
}

/** The answer for a request that failed because D1 could not be reached: a 503 to retry, not a 500. */
export const storageUnavailable = () =>
  new ApiError("storage_unavailable", "the database did not answer; try again in a few seconds", undefined, {
    "Retry-After": String(STORAGE_RETRY_AFTER_S),
  });
