import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody, parseWith } from "../http/validate.js";
import { envSet, envVars, secretList, secretName, secretSet } from "../../shared/schemas/function-config.js";
import { deleteSecret, listSecrets, putSecret, readEnv, replaceEnv } from "../function-config/service.js";
import { configChanged } from "../dispatch/client.js";
import { describeRoute } from "../openapi/describe.js";
import { json, noContent } from "../openapi/parts.js";

/**
 * Environment variables and secrets of a function (GET|PUT /v1/function/<id>/env,
 * /v1/function/<id>/secrets[/<NAME>]). Every change is told to the function's dispatcher before
 * the answer, so the next assignment carries it.
 */
export const functionConfigRoutes = new Hono<AppEnv>()
  .get("/:id/env", describeRoute({
    summary: "Read the function's environment variables",
    group: "configuration", auth: "account",
    ok: { status: 200, schema: envVars, description: "{NAME: value, …}; {} when none." },
    errors: [401, 404],
  }), async (c) => c.json(await readEnv(c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .put("/:id/env", describeRoute({
    summary: "Replace every environment variable (names [A-Za-z_][A-Za-z0-9_]{0,127}, not GC_ or GCFAAS_; at most 64 and 32 KiB); 409 name_taken when a secret has the name",
    group: "configuration", auth: "account",
    body: json(envVars),
    ok: noContent,
    errors: [400, 401, 404, 409, 415],
  }), async (c) => {
    const vars = await jsonBody(c, envSet);
    const id = c.req.param("id");
    await replaceEnv(c.var.db, c.var.caller.accountId, id, vars);
    await configChanged(c.env, id);
    return c.body(null, 204);
  })
  .get("/:id/secrets", describeRoute({
    summary: "List the function's secrets: names and times, never values",
    group: "configuration", auth: "account",
    ok: { status: 200, schema: secretList, description: "[{name, updatedAt}], newest first." },
    errors: [401, 404],
  }), async (c) => c.json(await listSecrets(c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .put("/:id/secrets/:name", describeRoute({
    summary: "Create or replace a secret (value at most 16 KiB; at most 32 a function); 409 name_taken when a variable has the name",
    group: "configuration", auth: "account",
    body: json(secretSet),
    ok: noContent,
    errors: [400, 401, 404, 409, 415],
  }), async (c) => {
    const name = parseWith(secretName, c.req.param("name"), "name");
    const { value } = await jsonBody(c, secretSet);
    const id = c.req.param("id");
    await putSecret(c.var.db, c.env.SECRETS_KEY, c.var.caller.accountId, id, name, value);
    await configChanged(c.env, id);
    return c.body(null, 204);
  })
  .delete("/:id/secrets/:name", describeRoute({
    summary: "Delete a secret",
    group: "configuration", auth: "account",
    ok: noContent,
    errors: [401, 404],
  }), async (c) => {
    const id = c.req.param("id");
    await deleteSecret(c.var.db, c.var.caller.accountId, id, c.req.param("name"));
    await configChanged(c.env, id);
    return c.body(null, 204);
  });
