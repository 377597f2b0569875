import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env.js";

/** The largest body any route takes (a build's zip); a client sending more loses its connection. */
const DRAIN_LIMIT_BYTES = 50 * 1024 * 1024;

/**
 * Reads what is left of a request body after the response is ready. workerd closes a keep-alive
 * connection when a response goes out before its request's body was read, without saying
 * `Connection: close`, so a client's next request on it fails with "connection reset" (Python's
 * http.client, requests.Session, Go's http.Client, Node's keep-alive agents). Every early refusal
 * (401, 404, 405, 415, …) would otherwise spoil the connection. Bodies over the largest limit are
 * not read to the end: the connection then closes, which is the only honest answer to them.
 */
export const drainBody: MiddlewareHandler<AppEnv> = async (c, next) => {
  // The request as it arrived: later middleware (bodyLimit) may put a counting body in its place.
  const original = c.req.raw;
  try {
    await next();
  } finally {
    await drain(original);
  }
};

async function drain(req: Request): Promise<void> {
  // Not `bodyUsed`: a body bodyLimit read part of and let go of is "used" and still has a rest.
  const body = req.body;
  if (!body || body.locked) return;
  let reader: ReadableStreamDefaultReader<Uint8Array>;
  try {
    reader = body.getReader();
  } catch {
    return;
  }
  let read = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      read += value.byteLength;
      if (read > DRAIN_LIMIT_BYTES) {
        await reader.cancel();
        return;
      }
    }
  } catch {
    /* the client went away: nothing to keep alive */
  } finally {
    reader.releaseLock();
  }
}
