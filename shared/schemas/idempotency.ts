import { z } from "zod";

/** The request header that names a call, so a retry of it is answered with the first call's task. */
export const IDEMPOTENCY_HEADER = "Idempotency-Key";
/** On an answer that replays an earlier call's task instead of making a new one. */
export const REPLAYED_HEADER = "Idempotent-Replayed";
/** A key is remembered this long after its first call. */
export const IDEMPOTENCY_KEEP_MS = 24 * 3600_000;

/** api-decisions "Idempotency-Key": 1–255 printable ASCII characters. */
export const idempotencyKey = z.string().regex(/^[\x20-\x7e]{1,255}$/, "must be 1 to 255 printable ASCII characters");
