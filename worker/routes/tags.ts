import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { jsonBody } from "../http/validate.js";
import { tagCreate, tagEdit } from "../../shared/schemas/tag.js";
import { createTag, deleteTag, editTag, listTags } from "../services/tags.js";

export const tagRoutes = new Hono<AppEnv>()
  .post("/", async (c) => {
    const input = await jsonBody(c, tagCreate);
    return c.json({ id: await createTag(c.var.db, c.var.caller.accountId, input) }, 201);
  })
  .get("/list", async (c) => c.json(await listTags(c.var.db, c.var.caller.accountId)))
  .patch("/:id", async (c) => {
    const input = await jsonBody(c, tagEdit);
    await editTag(c.var.db, c.var.caller.accountId, c.req.param("id"), input);
    return c.body(null, 204);
  })
  .delete("/:id", async (c) => {
    await deleteTag(c.var.db, c.var.caller.accountId, c.req.param("id"));
    return c.body(null, 204);
  });
