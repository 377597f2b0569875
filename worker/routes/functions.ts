import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody, query } from "../http/validate.js";
import { capabilitiesSet, functionCreate, functionEdit, functionListQuery } from "../../shared/schemas/function.js";
import { deletePrefix, functionPrefix } from "../lib/storage-keys.js";
import { getOwnTags } from "../services/tags.js";
import { cancelFunction, dispatcherFor, setPaused } from "../dispatch/client.js";
import { clearStorage, readStorage } from "../storage/service.js";
import { functionLogsQuery } from "../../shared/schemas/live-logs.js";
import { tailFunctionLogs } from "../live-logs/follow.js";
import {
  capabilitiesOf,
  createFunction,
  deleteFunction,
  describeFunction,
  editFunction,
  getOwnFunction,
  listFunctions,
  setCapabilities,
  togglePause,
} from "../services/functions.js";

export const functionRoutes = new Hono<AppEnv>()
  .post("/", async (c) => {
    const input = await jsonBody(c, functionCreate);
    return c.json({ id: await createFunction(c.var.db, c.var.caller.accountId, input) }, 201);
  })
  .get("/list", async (c) => {
    const { tag } = query(c, functionListQuery);
    if (tag) await getOwnTags(c.var.db, c.var.caller.accountId, tag);
    return c.json(await listFunctions(c.var.db, c.var.caller.accountId, tag));
  })
  .get("/:id", async (c) => c.json(await describeFunction(c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .patch("/:id", async (c) => {
    const input = await jsonBody(c, functionEdit);
    await editFunction(c.var.db, c.var.caller.accountId, c.req.param("id"), input);
    return c.body(null, 204);
  })
  .post("/:id/togglePause", async (c) => {
    const id = c.req.param("id");
    await setPaused(c.env, id, await togglePause(c.var.db, c.var.caller.accountId, id));
    return c.body(null, 204);
  })
  .delete("/:id", async (c) => {
    const { accountId } = c.var.caller;
    const id = c.req.param("id");
    await deleteFunction(c.var.db, accountId, id);
    await cancelFunction(c.env, id);
    // Zips and artifacts go after the records: a failure here leaves orphans, never dangling rows.
    c.executionCtx.waitUntil(deletePrefix(c.env.BUCKET, functionPrefix(accountId, id)));
    return c.body(null, 204);
  })
  .get("/:id/logs", async (c) => {
    query(c, functionLogsQuery);
    return tailFunctionLogs(c.env, c.var.db, c.var.caller.accountId, c.req.param("id"));
  })
  .get("/:id/storage", async (c) => c.json(await readStorage(c.var.db, c.env.BUCKET, c.var.caller.accountId, c.req.param("id"))))
  .delete("/:id/storage", async (c) => {
    const id = c.req.param("id");
    await clearStorage(c.var.db, c.env.BUCKET, c.var.caller.accountId, id);
    await dispatcherFor(c.env, id).clearStorage(id);
    return c.body(null, 204);
  })
  .get("/:id/capabilities", async (c) =>
    c.json(capabilitiesOf(await getOwnFunction(c.var.db, c.var.caller.accountId, c.req.param("id")))),
  )
  .post("/:id/capabilities", async (c) => {
    const input = await jsonBody(c, capabilitiesSet);
    await setCapabilities(c.var.db, c.var.caller.accountId, c.req.param("id"), input);
    return c.body(null, 204);
  });
