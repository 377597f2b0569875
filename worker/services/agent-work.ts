import { eq } from "drizzle-orm";
import type { AppEnv } from "../env.js";
import { notFound } from "../errors.js";
import { builds } from "../db/schema.js";
import { findTask } from "../task-life/find.js";
import { dispatcherFor, functionDispatchers, taskDispatcher } from "../dispatch/client.js";
import type { Access } from "../dispatch/nodes.js";
import type { DispatcherRpc } from "../dispatch/rpc.js";

type Ctx = { env: AppEnv["Bindings"]; var: AppEnv["Variables"] };

/**
 * The agent routes serve a node only the work its function's dispatcher assigned to that node and
 * still holds open; anything else, whatever the token, is 404, so a node cannot even learn which
 * ids exist.
 */
async function assigned(c: Ctx, shards: DurableObjectStub<DispatcherRpc>[], access: Access, what: string): Promise<void> {
  const held = await Promise.all(shards.map((s) => s.holds(c.var.agent.nodeId, access)));
  if (!held.includes(true)) throw notFound(what);
}

/**
 * A build the caller's node may touch: "build" for the one it builds (its source, its artifact
 * upload), "artifact" for the artifact of a build whose task it runs.
 */
export async function agentBuild(c: Ctx, id: string, access: "build" | "artifact", what: string) {
  const [b] = await c.var.db.select().from(builds).where(eq(builds.id, id));
  if (!b) throw notFound(what);
  // An artifact serves the function's tasks wherever they wait: in an earlier layout's shard too.
  if (access === "build") await assigned(c, [dispatcherFor(c.env, b.functionId)], { kind: "build", id }, what);
  else await assigned(c, functionDispatchers(c.env, b.functionId), { kind: "artifact", buildId: id }, what);
  return b;
}

/** A task the caller's node runs now. */
export async function agentTask(c: Ctx, id: string, what: string) {
  const t = await findTask(c.env, c.var.db, id);
  if (!t) throw notFound(what);
  await assigned(c, [taskDispatcher(c.env, t)], { kind: "task", id }, what);
  return t;
}
