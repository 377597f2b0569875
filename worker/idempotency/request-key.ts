import { idempotencyKey, IDEMPOTENCY_HEADER } from "../../shared/schemas/idempotency.js";
import { parseWith } from "../http/validate.js";
import type { TaskInput } from "../../shared/schemas/task.js";

/** A call's key and what the call asked for, which a retry under the same key must ask for again. */
export interface RequestKey {
  /** Where the key is unique: one account's function, or one public endpoint. */
  scope: string;
  key: string;
  fingerprint: string;
}

/**
 * The call's Idempotency-Key, or null without one; 400 validation_failed for a key that breaks the
 * decisions' rule. The fingerprint covers the method, the query (parameter order aside) and the
 * body as the function would get it — not the other headers, which a client's retry may change
 * (a new trace id, another User-Agent) without asking for anything else.
 */
export async function requestKey(req: Request, scope: string, input: Pick<TaskInput, "method" | "query" | "body" | "bodyEncoding">): Promise<RequestKey | null> {
  const raw = req.headers.get(IDEMPOTENCY_HEADER);
  if (raw === null) return null;
  const key = parseWith(idempotencyKey, raw, IDEMPOTENCY_HEADER);
  const query = Object.entries(input.query).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const asked = JSON.stringify([input.method, query, input.bodyEncoding ?? null, input.body ?? null]);
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(asked));
  const fingerprint = [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
  return { scope, key, fingerprint };
}
