import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody } from "../http/validate.js";
import { accountCreate, accountEdit, accountView, agentTokenCreate } from "../../shared/schemas/admin.js";
import { createAccount, describeAccount, mintAccountToken, mintAgentToken, revokeToken, setPlan } from "../services/accounts.js";
import { setLimits } from "../limits/account-limits.js";
import { plansFrom } from "../billing/plans.js";
import { allShards } from "../dispatch/client.js";
import { admissionChanged } from "../shard-admission/notify.js";
import { endpointIdsOf, endpointsChanged } from "../endpoint-door/notify.js";
import { listNodes, setNodeFlags } from "../services/nodes.js";
import { setGrant } from "../services/grants.js";
import { describeRoute } from "../openapi/describe.js";
import * as out from "../../shared/schemas/responses.js";
import { json, noContent } from "../openapi/parts.js";

/** Operator routes, behind ADMIN_TOKEN: accounts, their tokens, agent tokens and the fleet of nodes. */
export const adminRoutes = new Hono<AppEnv>()
  .post("/accounts", describeRoute({
    summary: "Create an account and its first token",
    group: "admin", auth: "admin",
    body: json(accountCreate),
    ok: { status: 201, schema: out.accountCreated, description: "The token is shown once." },
    errors: [400, 401, 415],
  }), async (c) => {
    const { name } = await jsonBody(c, accountCreate);
    const { accountId, tokenId, token } = await createAccount(c.var.db, name);
    return c.json({ accountId, tokenId, token }, 201);
  })
  .get("/accounts/:accountId", describeRoute({
    summary: "An account, its plan, its grants (privileged, egress) and the limits that apply to it",
    group: "admin", auth: "admin",
    ok: { status: 200, schema: accountView, description: "limits: the account's own values, else the operator's defaults." },
    errors: [401, 404],
  }), async (c) => c.json(await describeAccount(c.env, c.var.db, c.req.param("accountId"))))
  .patch("/accounts/:accountId", describeRoute({
    summary: "Change an account's operator settings: its plan, the privileged and egress grants, its limits (null: back to the default)",
    group: "admin", auth: "admin",
    body: json(accountEdit),
    ok: noContent,
    errors: [400, 401, 404, 415],
  }), async (c) => {
    const { plan, privileged, egress, limits } = await jsonBody(c, accountEdit);
    const accountId = c.req.param("accountId");
    if (plan !== undefined) {
      await setPlan(c.var.db, plansFrom(c.env.PLANS), accountId, plan);
      await admissionChanged(c.env, { accountId });
    }
    if (privileged !== undefined) await setGrant(c.var.db, c.env, "privileged", accountId, privileged);
    if (egress !== undefined) await setGrant(c.var.db, c.env, "egress", accountId, egress);
    if (limits !== undefined) {
      await setLimits(c.var.db, accountId, limits);
      // The doors of the account's endpoints hold its limit of synchronous waits.
      if ("syncWaits" in limits) await endpointsChanged(c.env, await endpointIdsOf(c.var.db, { accountId }));
    }
    return c.body(null, 204);
  })
  .post("/accounts/:accountId/tokens", describeRoute({
    summary: "Mint another account token",
    group: "admin", auth: "admin",
    ok: { status: 201, schema: out.tokenCreated, description: "The token is shown once." },
    errors: [401, 404],
  }), async (c) => c.json(await mintAccountToken(c.var.db, c.req.param("accountId")), 201))
  .post("/agent-tokens", describeRoute({
    summary: "Mint an agent token bound to one node id",
    group: "admin", auth: "admin",
    body: json(agentTokenCreate),
    ok: { status: 201, schema: out.agentTokenCreated, description: "The token is shown once; it speaks for that node only." },
    errors: [400, 401, 415],
  }), async (c) => {
    const { nodeId, name } = await jsonBody(c, agentTokenCreate);
    return c.json(await mintAgentToken(c.var.db, nodeId, name), 201);
  })
  .delete("/tokens/:tokenId", describeRoute({
    summary: "Revoke a token (an agent token's sockets close at once)",
    group: "admin", auth: "admin",
    ok: noContent,
    errors: [401, 404],
  }), async (c) => {
    const tokenId = c.req.param("tokenId");
    const { kind } = await revokeToken(c.var.db, tokenId);
    // Every shard holds a socket of every agent: each closes the token's now.
    if (kind === "agent") await Promise.all(allShards(c.env).map((s) => s.closeToken(tokenId)));
    return c.body(null, 204);
  })
  .get("/nodes", describeRoute({
    summary: "Every node that is or was connected",
    group: "admin", auth: "admin",
    ok: { status: 200, schema: out.fleetList, description: "The fleet, by node id." },
    errors: [401],
  }), async (c) => c.json(await listNodes(c.var.db, c.env)))
  .post("/nodes/:nodeId/drain", describeRoute({
    summary: "Let a node finish its work and take no more",
    group: "admin", auth: "admin",
    ok: noContent,
    errors: [401, 404],
  }), async (c) => {
    await setNodeFlags(c.var.db, c.env, c.req.param("nodeId"), { draining: true });
    return c.body(null, 204);
  })
  .post("/nodes/:nodeId/resume", describeRoute({
    summary: "Undo drain and disable",
    group: "admin", auth: "admin",
    ok: noContent,
    errors: [401, 404],
  }), async (c) => {
    await setNodeFlags(c.var.db, c.env, c.req.param("nodeId"), { draining: false, disabled: false });
    return c.body(null, 204);
  })
  .post("/nodes/:nodeId/disable", describeRoute({
    summary: "Close a node's connections now and refuse it until resumed; its work goes back to the queue",
    group: "admin", auth: "admin",
    ok: noContent,
    errors: [401, 404],
  }), async (c) => {
    await setNodeFlags(c.var.db, c.env, c.req.param("nodeId"), { disabled: true });
    return c.body(null, 204);
  });
