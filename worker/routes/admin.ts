import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody } from "../http/validate.js";
import { accountCreate, accountEdit, agentTokenCreate } from "../../shared/schemas/admin.js";
import { createAccount, mintAccountToken, mintAgentToken, revokeToken, setPlan } from "../services/accounts.js";
import { plansFrom } from "../billing/plans.js";

/** Operator routes, behind ADMIN_TOKEN: accounts, their tokens, and agent tokens. */
export const adminRoutes = new Hono<AppEnv>()
  .post("/accounts", async (c) => {
    const { name } = await jsonBody(c, accountCreate);
    const { accountId, tokenId, token } = await createAccount(c.var.db, name);
    return c.json({ accountId, tokenId, token }, 201);
  })
  .patch("/accounts/:accountId", async (c) => {
    const { plan } = await jsonBody(c, accountEdit);
    await setPlan(c.var.db, plansFrom(c.env.PLANS), c.req.param("accountId"), plan);
    return c.body(null, 204);
  })
  .post("/accounts/:accountId/tokens", async (c) => c.json(await mintAccountToken(c.var.db, c.req.param("accountId")), 201))
  .post("/agent-tokens", async (c) => {
    const { name } = await jsonBody(c, agentTokenCreate, { contentType: "optional", emptyAs: {} });
    return c.json(await mintAgentToken(c.var.db, name), 201);
  })
  .delete("/tokens/:tokenId", async (c) => {
    await revokeToken(c.var.db, c.req.param("tokenId"));
    return c.body(null, 204);
  });
