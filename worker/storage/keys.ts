import { functionPrefix } from "../lib/storage-keys.js";

/** Under the function's prefix, so deleting the function deletes every stored value with it. */
export const storageValueKey = (accountId: string, functionId: string, taskId: string) => `${functionPrefix(accountId, functionId)}storage/${taskId}.bin`;
