import type { RetryPolicy } from "../../shared/schemas/retry.js";

/** What a function's shard is told when its retry policy or its concurrency cap changes. */
export interface FunctionPolicy {
  retry: RetryPolicy | null;
  concurrency: number | null;
}
