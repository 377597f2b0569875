import { functionPrefix } from "../lib/storage-keys.js";

/** At most this much is stored (decoded), as the original service's guide says (1 MB). */
export const MAX_STORAGE_BYTES = 1024 * 1024;
/** Values up to this size (base64 characters) travel inline in D1 rows and task frames; larger ones by R2. */
export const INLINE_STORAGE_CHARS = 48 * 1024;

/** Under the function's prefix, so deleting the function deletes every stored value with it. */
export const storageValueKey = (accountId: string, functionId: string, taskId: string) => `${functionPrefix(accountId, functionId)}storage/${taskId}.bin`;
