import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody } from "../http/validate.js";
import { accountCreate, accountEdit, agentTokenCreate } from "../../shared/schemas/admin.js";
import { createAccount, describeAccount, mintAccountToken, mintAgentToken, revokeToken, setPlan } from "../services/accounts.js";
import { setLimits } from "../limits/account-limits.js";
import { plansFrom } from "../billing/plans.js";
import { allShards } from "../dispatch/client.js";
import { listNodes, setNodeFlags } from "../services/nodes.js";
import { setGrant } from "../services/grants.js";

/** Operator routes, behind ADMIN_TOKEN: accounts, their tokens, agent tokens and the fleet of nodes. */
export const adminRoutes = new Hono<AppEnv>()
  .post("/accounts", async (c) => {
    const { name } = await jsonBody(c, accountCreate);
    const { accountId, tokenId, token } = await createAccount(c.var.db, name);
    return c.json({ accountId, tokenId, token }, 201);
  })
  .get("/accounts/:accountId", async (c) => c.json(await describeAccount(c.env, c.var.db, c.req.param("accountId"))))
  .patch("/accounts/:accountId", async (c) => {
    const { plan, privileged, egress, limits } = await jsonBody(c, accountEdit);
    const accountId = c.req.param("accountId");
    if (plan !== undefined) await setPlan(c.var.db, plansFrom(c.env.PLANS), accountId, plan);
    if (privileged !== undefined) await setGrant(c.var.db, c.env, "privileged", accountId, privileged);
    if (egress !== undefined) await setGrant(c.var.db, c.env, "egress", accountId, egress);
    if (limits !== undefined) await setLimits(c.var.db, accountId, limits);
    return c.body(null, 204);
  })
  .post("/accounts/:accountId/tokens", async (c) => c.json(await mintAccountToken(c.var.db, c.req.param("accountId")), 201))
  .post("/agent-tokens", async (c) => {
    const { nodeId, name } = await jsonBody(c, agentTokenCreate);
    return c.json(await mintAgentToken(c.var.db, nodeId, name), 201);
  })
  .delete("/tokens/:tokenId", async (c) => {
    const tokenId = c.req.param("tokenId");
    const { kind } = await revokeToken(c.var.db, tokenId);
    // Every shard holds a socket of every agent: each closes the token's now.
    if (kind === "agent") await Promise.all(allShards(c.env).map((s) => s.closeToken(tokenId)));
    return c.body(null, 204);
  })
  .get("/nodes", async (c) => c.json(await listNodes(c.var.db, c.env)))
  .post("/nodes/:nodeId/drain", async (c) => {
    await setNodeFlags(c.var.db, c.env, c.req.param("nodeId"), { draining: true });
    return c.body(null, 204);
  })
  .post("/nodes/:nodeId/resume", async (c) => {
    await setNodeFlags(c.var.db, c.env, c.req.param("nodeId"), { draining: false, disabled: false });
    return c.body(null, 204);
  })
  .post("/nodes/:nodeId/disable", async (c) => {
    await setNodeFlags(c.var.db, c.env, c.req.param("nodeId"), { disabled: true });
    return c.body(null, 204);
  });
