import type { Bindings } from "../env.js";
import type { TaskRow } from "../db/rows.js";
import { taskDispatcher } from "../dispatch/client.js";
import type { DispatcherRpc } from "../dispatch/rpc.js";
import { refusalError, type Refusal } from "./refusal.js";
import type { CreateRequest } from "./create-types.js";

/** The shard that asks: its own tasks are created by a direct call, not an RPC to itself. */
export interface AskingShard {
  id: DurableObjectId;
  self: DispatcherRpc;
}

/**
 * Creates a task for work a shard issues itself (a trigger's firing, a dead letter) on the shard of
 * the task's function, as a caller's task is created. The task's staged input is deleted again
 * when the function refuses it for good (no build, over the plan or the pending cap, gone): then
 * the answer is the refusal, which the issuer logs and does not retry. A refusal that only means
 * "not now" (D1 unreachable for a function the shard does not know, a lease race) is thrown
 * instead, so that the issuer's own retry runs the creation again.
 */
export async function createInShard(env: Bindings, from: AskingShard, req: CreateRequest): Promise<{ task: TaskRow } | { refused: Refusal }> {
  const stub = taskDispatcher(env, req);
  const answer = stub.id.equals(from.id) ? await from.self.createTask(req) : await stub.createTask(req);
  if (!("refused" in answer)) return { task: answer.task };
  if (notNow(answer.refused)) throw refusalError(answer.refused);
  if (req.staged.inputKey) await env.BUCKET.delete(req.staged.inputKey);
  return { refused: answer.refused };
}

const notNow = (r: Refusal) => r.code === "storage_unavailable" || r.code === "conflict";
