import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env.js";
import { ApiError } from "../errors.js";
import { bodyRuleFor, sizeText, type BodyRule } from "../http/body-limits.js";

export const payloadTooLarge = (rule: BodyRule) =>
  new ApiError("payload_too_large", `the body exceeds ${sizeText(rule.limit)}, the limit for ${rule.what}`, [{ field: "body", message: `at most ${sizeText(rule.limit)}` }]);

/**
 * Holds every request body to its route's limit (http/body-limits.ts) before anything reads it:
 * a declared Content-Length over the limit is refused at once, unread; a body without one
 * (chunked) is counted as it is read and fails at the limit, whoever reads it (a form parser, a
 * JSON reader, a zip stream), and the answer is then 413 whatever that reader made of the
 * failure. Nothing is buffered here. What is left unread is drained by drainBody, which must run
 * before this middleware (it keeps the client's keep-alive connection usable).
 */
export const bodyLimit: MiddlewareHandler<AppEnv> = async (c, next) => {
  const req = c.req.raw;
  const rule = bodyRuleFor(req.method, c.req.path);
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > rule.limit) throw payloadTooLarge(rule);
  let counted: CountedBody | undefined;
  // A GET or HEAD Request cannot be made with a body. Theirs are read only by the list filters
  // (http/validate.ts listFilters), which count to the same 10 MiB themselves.
  if (req.body && declared === null && req.method !== "GET" && req.method !== "HEAD") {
    counted = new CountedBody(req.body, rule.limit);
    c.req.raw = new Request(req, { body: counted.stream });
  }
  await next();
  if (counted?.exceeded) {
    c.res = undefined;
    c.res = c.json(payloadTooLarge(rule).body(), 413);
  }
};

/**
 * A body that fails once more than `limit` bytes went through. It reads the original lazily and
 * lets go of it (never cancels it) when it fails or is cancelled, so that drainBody can still
 * read what is left of the original and keep the connection.
 */
class CountedBody {
  exceeded = false;
  readonly stream: ReadableStream<Uint8Array>;

  constructor(original: ReadableStream<Uint8Array>, limit: number) {
    let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
    let size = 0;
    const release = () => {
      try {
        reader?.releaseLock();
      } catch {
        /* a read still pending: the original stays locked and drainBody leaves it */
      }
      reader = undefined;
    };
    this.stream = new ReadableStream<Uint8Array>({
      pull: async (ctrl) => {
        reader ??= original.getReader();
        const { done, value } = await reader.read();
        if (done) {
          release();
          ctrl.close();
          return;
        }
        size += value.byteLength;
        if (size > limit) {
          this.exceeded = true;
          release();
          ctrl.error(new ApiError("payload_too_large", `the body exceeds ${sizeText(limit)}`));
          return;
        }
        ctrl.enqueue(value);
      },
      cancel: release,
    });
  }
}
