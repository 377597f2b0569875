import { z } from "zod";

/**
 * Function storage (the original service's `GC-Storage` header): a function answers with
 * `GC-Storage: <base64>` and later calls of it receive the value in the request header of the
 * same name. At most 1 MiB (decoded) is stored.
 */
export const MAX_STORAGE_BYTES = 1024 * 1024;
/** Values up to this many base64 characters travel inline (task frames, D1 rows); larger ones through R2. */
export const INLINE_STORAGE_CHARS = 48 * 1024;
export const STORAGE_HEADER = "gc-storage";

const base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/);

/** What a finished task did to its function's storage, as the agent reports it. */
export const storageChange = z.discriminatedUnion("op", [
  z.object({ op: z.literal("clear") }),
  z.object({
    op: z.literal("set"),
    size: z.int().min(1).max(MAX_STORAGE_BYTES),
    /** The value, when inline; absent when the agent PUT the bytes to the task's storage path first. */
    value: base64.max(INLINE_STORAGE_CHARS).optional(),
  }),
]);
export type StorageChange = z.infer<typeof storageChange>;

/** The function's storage handed to a task: inline, or a path on the control plane to GET the bytes from. */
export const storageGiven = z.union([z.object({ value: base64.max(INLINE_STORAGE_CHARS) }), z.object({ path: z.string().max(512) })]);
export type StorageGiven = z.infer<typeof storageGiven>;

/** GET /v1/function/<id>/storage */
export const storageOut = z.object({ size: z.int(), updatedAt: z.string(), value: z.string() });
