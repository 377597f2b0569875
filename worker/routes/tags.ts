import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody } from "../http/validate.js";
import { tagCreate, tagEdit } from "../../shared/schemas/tag.js";
import { createTag, deleteTag, editTag, listTags } from "../services/tags.js";
import { describeRoute } from "../openapi/describe.js";
import * as out from "../../shared/schemas/responses.js";
import { created, json, noContent } from "../openapi/parts.js";

export const tagRoutes = new Hono<AppEnv>()
  .post("/", describeRoute({
    summary: "Create a tag",
    group: "tags", auth: "account",
    body: json(tagCreate),
    ok: created("tag"),
    errors: [400, 401, 415],
  }), async (c) => {
    const input = await jsonBody(c, tagCreate);
    return c.json({ id: await createTag(c.var.db, c.var.caller.accountId, input) }, 201);
  })
  .get("/list", describeRoute({
    summary: "List tags",
    group: "tags", auth: "account",
    ok: { status: 200, schema: out.tagList, description: "Newest first." },
    errors: [401],
  }), async (c) => c.json(await listTags(c.var.db, c.var.caller.accountId)))
  .patch("/:id", describeRoute({
    summary: "Edit a tag",
    group: "tags", auth: "account",
    body: json(tagEdit),
    ok: noContent,
    errors: [400, 401, 404, 415],
  }), async (c) => {
    const input = await jsonBody(c, tagEdit);
    await editTag(c.var.db, c.var.caller.accountId, c.req.param("id"), input);
    return c.body(null, 204);
  })
  .delete("/:id", describeRoute({
    summary: "Delete a tag and detach it everywhere",
    group: "tags", auth: "account",
    ok: noContent,
    errors: [401, 404],
  }), async (c) => {
    await deleteTag(c.var.db, c.var.caller.accountId, c.req.param("id"));
    return c.body(null, 204);
  });
