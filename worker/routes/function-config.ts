import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody, parseWith } from "../http/validate.js";
import { envSet, secretName, secretSet } from "../../shared/schemas/function-config.js";
import { deleteSecret, listSecrets, putSecret, readEnv, replaceEnv } from "../function-config/service.js";
import { configChanged } from "../dispatch/client.js";

/**
 * Environment variables and secrets of a function (GET|PUT /v1/function/<id>/env,
 * /v1/function/<id>/secrets[/<NAME>]). Every change is told to the function's dispatcher before
 * the answer, so the next assignment carries it.
 */
export const functionConfigRoutes = new Hono<AppEnv>()
  .get("/:id/env", async (c) => c.json(await readEnv(c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .put("/:id/env", async (c) => {
    const vars = await jsonBody(c, envSet);
    const id = c.req.param("id");
    await replaceEnv(c.var.db, c.var.caller.accountId, id, vars);
    await configChanged(c.env, id);
    return c.body(null, 204);
  })
  .get("/:id/secrets", async (c) => c.json(await listSecrets(c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .put("/:id/secrets/:name", async (c) => {
    const name = parseWith(secretName, c.req.param("name"), "name");
    const { value } = await jsonBody(c, secretSet);
    const id = c.req.param("id");
    await putSecret(c.var.db, c.env.SECRETS_KEY, c.var.caller.accountId, id, name, value);
    await configChanged(c.env, id);
    return c.body(null, 204);
  })
  .delete("/:id/secrets/:name", async (c) => {
    const id = c.req.param("id");
    await deleteSecret(c.var.db, c.var.caller.accountId, id, c.req.param("name"));
    await configChanged(c.env, id);
    return c.body(null, 204);
  });
