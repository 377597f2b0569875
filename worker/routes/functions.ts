import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody, query } from "../http/validate.js";
import { capabilitiesSet, functionCreate, functionEdit, functionListQuery } from "../../shared/schemas/function.js";
import { deletePrefix, functionPrefix } from "../lib/storage-keys.js";
import { getOwnTags } from "../services/tags.js";
import { cancelFunction, functionDispatchers, heldOfFunction, setPaused } from "../dispatch/client.js";
import { clearStorage, readStorage } from "../storage/service.js";
import { admissionChanged } from "../shard-admission/notify.js";
import { endpointIdsOf, endpointsChanged, endpointsGone } from "../endpoint-door/notify.js";
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
import { describeRoute } from "../openapi/describe.js";
import * as out from "../../shared/schemas/responses.js";
import { created, json, noContent } from "../openapi/parts.js";
import { storageOut } from "../../shared/schemas/storage.js";

export const functionRoutes = new Hono<AppEnv>()
  .post("/", describeRoute({
    summary: "Create a function",
    group: "functions", auth: "account",
    body: json(functionCreate),
    ok: created("function"),
    errors: [400, 401, 413, 415],
  }), async (c) => {
    const input = await jsonBody(c, functionCreate);
    return c.json({ id: await createFunction(c.var.db, c.var.caller.accountId, input) }, 201);
  })
  .get("/list", describeRoute({
    summary: "List functions, optionally by tag",
    group: "functions", auth: "account",
    query: functionListQuery,
    ok: { status: 200, schema: out.functionList, description: "Newest first." },
    errors: [400, 401, 404],
  }), async (c) => {
    const { tag } = query(c, functionListQuery);
    if (tag) await getOwnTags(c.var.db, c.var.caller.accountId, tag);
    return c.json(await listFunctions(c.var.db, c.var.caller.accountId, tag));
  })
  .get("/:id", describeRoute({
    summary: "Get a function",
    group: "functions", auth: "account",
    ok: { status: 200, schema: out.functionGetOut, description: "The function with its capabilities and metrics." },
    errors: [401, 404],
  }), async (c) => c.json(await describeFunction(c.env, c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .patch("/:id", describeRoute({
    summary: "Edit a function",
    group: "functions", auth: "account",
    body: json(functionEdit),
    ok: noContent,
    errors: [400, 401, 404, 415],
  }), async (c) => {
    const input = await jsonBody(c, functionEdit);
    await editFunction(c.var.db, c.var.caller.accountId, c.req.param("id"), input);
    await admissionChanged(c.env, { functionId: c.req.param("id") });
    return c.body(null, 204);
  })
  .post("/:id/togglePause", describeRoute({
    summary: "Pause or resume a function",
    group: "functions", auth: "account",
    ok: noContent,
    errors: [401, 404],
  }), async (c) => {
    const id = c.req.param("id");
    await setPaused(c.env, id, await togglePause(c.var.db, c.var.caller.accountId, id));
    // Its endpoints answer 503 while it is paused: their doors hold the flag.
    await endpointsChanged(c.env, await endpointIdsOf(c.var.db, { functionId: id }));
    await admissionChanged(c.env, { functionId: id });
    return c.body(null, 204);
  })
  .delete("/:id", describeRoute({
    summary: "Delete a function, its triggers, endpoints, schedules and builds; cancel its pending tasks",
    group: "functions", auth: "account",
    ok: noContent,
    errors: [401, 404],
  }), async (c) => {
    const { accountId } = c.var.caller;
    const id = c.req.param("id");
    // The tasks its shards hold end there: D1 cancels only the others, then the shards cancel
    // theirs (an outcome already accepted is recorded as it ran, and metered as the shard metered it).
    const held = await heldOfFunction(c.env, id);
    // Its endpoints went with it: their doors answer 404 from the next call on.
    await endpointsGone(c.env, await deleteFunction(c.var.db, accountId, id, Date.now(), held));
    await cancelFunction(c.env, id);
    // The account's other functions changed too: those that sent their dead letters here no longer do.
    await admissionChanged(c.env, { accountId });
    // Zips and artifacts go after the records: a failure here leaves orphans, never dangling rows.
    c.executionCtx.waitUntil(deletePrefix(c.env.BUCKET, functionPrefix(accountId, id)));
    return c.body(null, 204);
  })
  .get("/:id/logs", describeRoute({
    summary: "Tail every task of the function live (follow=1 required), as Server-Sent Events",
    group: "functions", auth: "account",
    query: functionLogsQuery,
    ok: { status: 200, contentType: "text/event-stream", description: "The tail." },
    events: "Server-Sent Events: `event: task` (data {\"taskId\", \"state\": \"running\" | \"started\" | \"ended\", \"status\"?}) when a task starts or ends (running: it ran when the tail began); `event: line` (data {\"taskId\", \"line\"}) for each line a task prints; `event: dropped` (data {\"lines\": n}) when this reader was too slow and lost n lines. Open until the client closes it.",
    errors: [400, 401, 404, 429],
  }), async (c) => {
    query(c, functionLogsQuery);
    return tailFunctionLogs(c.env, c.var.db, c.var.caller.accountId, c.req.param("id"));
  })
  .get("/:id/storage", describeRoute({
    summary: "Read the function's storage (what its tasks set with the GC-Storage response header)",
    group: "functions", auth: "account",
    ok: { status: 200, schema: storageOut, description: "{size, updatedAt, value (base64)}; 404 when nothing is stored." },
    errors: [401, 404],
  }), async (c) => c.json(await readStorage(c.env, c.var.db, c.var.caller.accountId, c.req.param("id"))))
  .delete("/:id/storage", describeRoute({
    summary: "Clear the function's storage",
    group: "functions", auth: "account",
    ok: noContent,
    errors: [401, 404],
  }), async (c) => {
    const id = c.req.param("id");
    await clearStorage(c.var.db, c.env.BUCKET, c.var.caller.accountId, id);
    await Promise.all(functionDispatchers(c.env, id).map((s) => s.clearStorage(id)));
    return c.body(null, 204);
  })
  .get("/:id/capabilities", describeRoute({
    summary: "Get capabilities",
    group: "functions", auth: "account",
    ok: { status: 200, schema: out.capabilitiesOut, description: "timeout s, cpuCount CPUs, memSize MiB." },
    errors: [401, 404],
  }), async (c) =>
    c.json(capabilitiesOf(await getOwnFunction(c.var.db, c.var.caller.accountId, c.req.param("id")))),
  )
  .post("/:id/capabilities", describeRoute({
    summary: "Set capabilities (privileged: true only for accounts the operator granted)",
    group: "functions", auth: "account",
    body: json(capabilitiesSet),
    ok: noContent,
    errors: [400, 401, 403, 404, 415],
  }), async (c) => {
    const input = await jsonBody(c, capabilitiesSet);
    await setCapabilities(c.var.db, c.var.caller.accountId, c.req.param("id"), input);
    await admissionChanged(c.env, { functionId: c.req.param("id") });
    return c.body(null, 204);
  });
