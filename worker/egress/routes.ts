import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody } from "../http/validate.js";
import { networkOut, networkSet } from "../../shared/schemas/network.js";
import { getNetwork, setNetwork } from "./service.js";
import { admissionChanged } from "../shard-admission/notify.js";
import { describeRoute } from "../openapi/describe.js";
import { json, noContent } from "../openapi/parts.js";

/** What a function may reach (GET|PUT /v1/function/<id>/network): mounted under /v1/function. */
export const networkRoutes = new Hono<AppEnv>()
  .get("/:id/network", describeRoute({
    summary: "What the function may reach: egress \"none\" (no network, the default) or \"internet\" (public addresses only)",
    group: "network", auth: "account",
    ok: { status: 200, schema: networkOut, description: "{egress}." },
    errors: [401, 404],
  }), async (c) => c.json(await getNetwork(c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .put("/:id/network", describeRoute({
    summary: "Set the function's egress; \"internet\" needs the operator's grant (403 egress_not_allowed) and runs only on nodes that allow egress; applies to tasks issued after",
    group: "network", auth: "account",
    body: json(networkSet),
    ok: noContent,
    errors: [400, 401, 403, 404, 415],
  }), async (c) => {
    const input = await jsonBody(c, networkSet);
    await setNetwork(c.var.db, c.var.caller.accountId, c.req.param("id"), input);
    await admissionChanged(c.env, { functionId: c.req.param("id") });
    return c.body(null, 204);
  });
