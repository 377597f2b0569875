import { ApiError } from "../errors.js";

const LOCAL_HEADER = [0x50, 0x4b, 0x03, 0x04];
const EMPTY_ARCHIVE = [0x50, 0x4b, 0x05, 0x06];
const EOCD_MAX = 22 + 0xffff; // end-of-central-directory record plus the longest comment

const notZip = (why: string) => new ApiError("validation_failed", `the body must be a zip archive: ${why}`, [{ field: "body", message: why }]);
const startsWith = (bytes: Uint8Array, sig: number[]) => sig.every((b, i) => bytes[i] === b);

/**
 * A pass-through stream that refuses anything but a zip: the first bytes must be a zip
 * signature and the end must hold an end-of-central-directory record. It checks while the
 * bytes flow to R2, so the upload is never buffered whole.
 */
export class ZipSniffer {
  private head: Uint8Array = new Uint8Array(0);
  private tail: Uint8Array = new Uint8Array(0);
  size = 0;

  readonly stream = new TransformStream<Uint8Array, Uint8Array>({
    transform: (chunk, ctrl) => {
      this.size += chunk.byteLength;
      if (this.head.length < 4) {
        this.head = concat(this.head, chunk.subarray(0, 4 - this.head.length));
        if (this.head.length === 4 && !startsWith(this.head, LOCAL_HEADER) && !startsWith(this.head, EMPTY_ARCHIVE))
          throw notZip("it does not start with a zip signature");
      }
      const joined = concat(this.tail, chunk);
      this.tail = joined.subarray(Math.max(0, joined.length - EOCD_MAX)).slice();
      ctrl.enqueue(chunk);
    },
  });

  /** After the stream ended: throws unless the archive is complete. */
  verify(): void {
    if (this.size < 22) throw notZip("it is too short");
    for (let i = this.tail.length - 22; i >= 0; i--) if (startsWith(this.tail.subarray(i), EMPTY_ARCHIVE)) return;
    throw notZip("it has no end-of-central-directory record (truncated?)");
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

/**
 * Streams a zip request body into R2 under `key`, validating it on the way. R2 needs a known
 * length: with Content-Length the body is streamed through a FixedLengthStream; without it
 * (chunked uploads) it goes up as a multipart upload of fixed-size parts, so no upload is refused
 * for its framing and at most two parts are ever held in memory, never the whole body.
 */
export async function storeZip(bucket: R2Bucket, key: string, req: Request, limit: number): Promise<number> {
  const declared = req.headers.get("content-length");
  if (declared !== null && !/^\d+$/.test(declared)) throw new ApiError("validation_failed", "Content-Length is not a number");
  const length = declared === null ? undefined : Number(declared);
  if (length !== undefined && length > limit) throw tooLarge(limit);
  if (!req.body || length === 0) throw notZip("the body is empty");
  const sniffer = new ZipSniffer();
  const checked = (await zipLooking(req.body)).pipeThrough(sniffer.stream);
  try {
    if (length !== undefined) {
      const fixed = new FixedLengthStream(length);
      await Promise.all([checked.pipeTo(fixed.writable), bucket.put(key, fixed.readable)]);
    } else {
      await putInParts(bucket, key, checked, limit);
    }
    sniffer.verify();
    return sniffer.size;
  } catch (e) {
    await bucket.delete(key).catch(() => undefined);
    if (e instanceof ApiError) throw e;
    // Storage failing is ours to fix, not the caller's; its text names internals, so it is logged only.
    console.error(JSON.stringify({ level: "error", message: "zip upload failed", key, error: String(e) }));
    throw new ApiError("internal_error", "the upload could not be stored; it has been logged, try again");
  }
}

/** R2's multipart parts are equal in size but the last, and at least 5 MiB. */
export const PART_BYTES = 5 * 1024 * 1024;

async function putInParts(bucket: R2Bucket, key: string, body: ReadableStream<Uint8Array>, limit: number): Promise<void> {
  const parts = fixedParts(body, PART_BYTES, limit);
  const first = await parts.next();
  const second = await parts.next();
  if (second.done) {
    await bucket.put(key, first.done ? new Uint8Array(0) : first.value);
    return;
  }
  const upload = await bucket.createMultipartUpload(key);
  try {
    const uploaded = [await upload.uploadPart(1, first.value!), await upload.uploadPart(2, second.value)];
    for await (const part of parts) uploaded.push(await upload.uploadPart(uploaded.length + 1, part));
    await upload.complete(uploaded);
  } catch (e) {
    await upload.abort().catch(() => undefined);
    throw e;
  }
}

/** The body cut into parts of exactly `size` bytes (the last one shorter), refused past `limit`. */
async function* fixedParts(body: ReadableStream<Uint8Array>, size: number, limit: number): AsyncGenerator<Uint8Array> {
  let part = new Uint8Array(size);
  let fill = 0;
  let total = 0;
  for await (const chunk of body as unknown as AsyncIterable<Uint8Array>) {
    total += chunk.byteLength;
    if (total > limit) throw tooLarge(limit);
    for (let at = 0; at < chunk.byteLength; ) {
      const n = Math.min(size - fill, chunk.byteLength - at);
      part.set(chunk.subarray(at, at + n), fill);
      fill += n;
      at += n;
      if (fill === size) {
        yield part;
        part = new Uint8Array(size);
        fill = 0;
      }
    }
  }
  if (fill > 0) yield part.subarray(0, fill);
}

/**
 * Refuses a body whose first bytes are not a zip signature before anything is sent to R2, and
 * gives back a stream of the whole body. Failing inside the pipe to R2 instead leaves workerd
 * with a rejected read of the request stream that nothing can handle (an "uncaught" log line
 * for every refused upload).
 */
async function zipLooking(body: ReadableStream<Uint8Array>): Promise<ReadableStream<Uint8Array>> {
  const reader = body.getReader();
  const first: Uint8Array[] = [];
  let head: Uint8Array = new Uint8Array(0);
  while (head.length < 4) {
    const { done, value } = await reader.read();
    if (done) break;
    first.push(value);
    head = concat(head, value.subarray(0, 4 - head.length));
  }
  if (head.length === 4 && !startsWith(head, LOCAL_HEADER) && !startsWith(head, EMPTY_ARCHIVE)) throw notZip("it does not start with a zip signature");
  return new ReadableStream<Uint8Array>({
    start: (ctrl) => first.forEach((c) => ctrl.enqueue(c)),
    pull: async (ctrl) => {
      const { done, value } = await reader.read();
      if (done) ctrl.close();
      else ctrl.enqueue(value);
    },
    cancel: (reason) => reader.cancel(reason),
  });
}

const tooLarge = (limit: number) => new ApiError("payload_too_large", `the zip exceeds ${limit / 1024 / 1024} MiB`);
