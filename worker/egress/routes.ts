import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody } from "../http/validate.js";
import { networkSet } from "../../shared/schemas/network.js";
import { getNetwork, setNetwork } from "./service.js";

/** What a function may reach (GET|PUT /v1/function/<id>/network): mounted under /v1/function. */
export const networkRoutes = new Hono<AppEnv>()
  .get("/:id/network", async (c) => c.json(await getNetwork(c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .put("/:id/network", async (c) => {
    const input = await jsonBody(c, networkSet);
    await setNetwork(c.var.db, c.var.caller.accountId, c.req.param("id"), input);
    return c.body(null, 204);
  });
