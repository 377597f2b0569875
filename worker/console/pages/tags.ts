import { html } from "hono/html";
import type { ConsoleApp, ConsoleContext } from "../context.js";
import { formOf, seeOther } from "../context.js";
import { csrfField, errorBox, layout, notice, safeColor } from "../layout.js";
import type { ApiError } from "../api.js";
import type { TagItem } from "./functions.js";

async function render(c: ConsoleContext, error?: ApiError, status = 200) {
  const tags = await c.var.api.get<TagItem[]>("/v1/tag/list");
  const body = html`<h1>Tags</h1>${notice(c.req.query("done"))}${errorBox(error)}
<div class="scroll"><table><thead><tr><th scope="col">Tag</th><th scope="col">Edit</th><th scope="col">Used by</th></tr></thead>
<tbody>${tags.map(
    (t) => html`<tr><td><span class="tag" style="background:${safeColor(t.color)}">${t.name}</span> <code>${t.color}</code></td>
<td><form method="post" action="/console/tags/${t.id}" class="row">${csrfField(c.var.page)}
<label for="tn-${t.id}" style="margin:0">Name</label><input id="tn-${t.id}" name="name" type="text" value="${t.name}" style="width:10rem">
<label for="tc-${t.id}" style="margin:0">Colour</label><input id="tc-${t.id}" name="color" type="color" value="${safeColor(t.color)}">
<button type="submit" class="secondary">Save</button></form>
<form method="post" action="/console/tags/${t.id}/delete">${csrfField(c.var.page)}<button type="submit" class="danger">Delete</button></form></td>
<td><a href="/console?tag=${t.id}">functions</a> · <a href="/console/endpoints?tag=${t.id}">endpoints</a> · <a href="/console/triggers?tag=${t.id}">triggers</a></td></tr>`,
  )}</tbody></table></div>
<section class="card" aria-labelledby="new-tag"><h2 id="new-tag">New tag</h2>
<form method="post" action="/console/tags">${csrfField(c.var.page)}
<label for="tag-name">Name</label><input id="tag-name" name="name" type="text" required>
<label for="tag-color">Colour</label><input id="tag-color" name="color" type="color" value="#808080">
<p><button type="submit">Create tag</button></p></form></section>`;
  return c.html(layout("Tags", { ...c.var.page, section: "tags" }, body), status as 200);
}

export function registerTags(app: ConsoleApp) {
  app.get("/tags", (c) => render(c));
  app.post("/tags", async (c) => {
    const form = await formOf(c);
    const r = await c.var.api.call("POST", "/v1/tag", { json: { name: form.get("name"), color: form.get("color") } });
    return r.ok ? seeOther(c, "/console/tags", "Tag created.") : render(c, r.error, r.status);
  });
  app.post("/tags/:id", async (c) => {
    const form = await formOf(c);
    const r = await c.var.api.call("PATCH", `/v1/tag/${c.req.param("id")}`, { json: { name: form.get("name"), color: form.get("color") } });
    return r.ok ? seeOther(c, "/console/tags", "Tag saved.") : render(c, r.error, r.status);
  });
  app.post("/tags/:id/delete", async (c) => {
    const r = await c.var.api.call("DELETE", `/v1/tag/${c.req.param("id")}`);
    return r.ok ? seeOther(c, "/console/tags", "Tag deleted.") : render(c, r.error, r.status);
  });
}
