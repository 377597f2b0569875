import type { Followed } from "./log-follows.js";
import type { DispatcherRpc } from "./rpc.js";

/**
 * Live log streams leave the dispatcher as the body of a `fetch` answer rather than an RPC return
 * value: when the reader goes away, a fetch body is cancelled at once, which is how the dispatcher
 * learns to forget the follower (and tell the agent to stop streaming).
 */
const BASE = "https://dispatcher.internal/live";

interface LiveLogRequest {
  kind: "task" | "function";
  id: string;
  accountId: string;
}

/** The follower's answer status when the dispatcher does not hold the task: it finished, or is not the caller's. */
const NOT_HERE = 404;
const LIMIT = 429;

export function liveLogRequest(request: Request): LiveLogRequest | undefined {
  const url = new URL(request.url);
  if (!url.href.startsWith(`${BASE}/`)) return undefined;
  const [kind, id] = url.pathname.split("/").slice(2);
  const accountId = url.searchParams.get("account") ?? "";
  return (kind === "task" || kind === "function") && id ? { kind, id, accountId } : undefined;
}

export function followedResponse(followed: Followed | null): Response {
  if (!followed) return new Response(null, { status: NOT_HERE });
  if ("limit" in followed) return Response.json(followed, { status: LIMIT });
  return new Response(followed.stream);
}

/** Asks the shard for a follower stream; null when it does not hold the task. */
export async function requestFollow(stub: DurableObjectStub<DispatcherRpc>, kind: "task" | "function", id: string, accountId: string): Promise<Followed | null> {
  const res = await stub.fetch(`${BASE}/${kind}/${id}?account=${encodeURIComponent(accountId)}`);
  if (res.status === NOT_HERE) return null;
  if (res.status === LIMIT) return (await res.json()) as Extract<Followed, { limit: number }>;
  if (!res.ok || !res.body) throw new Error(`the dispatcher answered a follow with ${res.status}`);
  return { stream: res.body };
}
