import { html } from "hono/html";
import type { ConsoleApp, ConsoleContext } from "../context.js";
import { formOf, seeOther } from "../context.js";
import { csrfField, errorBox, layout, notice, tagChips } from "../layout.js";
import type { ApiError } from "../api.js";
import { triggerGraph } from "../graph.js";
import { tagFilter, type TagItem } from "./functions.js";

interface TriggerItem {
  id: string;
  functionId: string;
  nextId: string;
  status: number;
  includeResult: boolean;
  tags: TagItem[];
  createdAt: string;
}

/** Every trigger of the account: the list operation pages by at most 20. */
async function allTriggers(c: ConsoleContext): Promise<TriggerItem[]> {
  const out: TriggerItem[] = [];
  for (let page = 1; ; page++) {
    const r = await c.var.api.get<{ pageCount: number; results: TriggerItem[] }>(`/v1/trigger/list?limit=20&page=${page}`);
    out.push(...r.results);
    if (page >= r.pageCount) return out;
  }
}

async function render(c: ConsoleContext, error?: ApiError, status = 200) {
  const tag = c.req.query("tag") || undefined;
  const [triggers, fns, tags] = await Promise.all([allTriggers(c), c.var.api.get<{ id: string; name: string }[]>("/v1/function/list"), c.var.api.get<TagItem[]>("/v1/tag/list")]);
  const shown = tag ? triggers.filter((t) => t.tags.some((x) => x.id === tag)) : triggers;
  const names = new Map(fns.map((f) => [f.id, f.name]));
  const label = (t: TriggerItem) => `${t.status}${t.includeResult ? " · result" : ""}`;
  const options = (selected?: string) => fns.map((f) => html`<option value="${f.id}"${f.id === selected ? html` selected` : ""}>${f.name} (${f.id})</option>`);
  const body = html`<h1>Triggers</h1>${notice(c.req.query("done"))}${tagFilter("/console/triggers", tags, tag)}
${shown.length ? triggerGraph(names, shown.map((t) => ({ id: t.id, from: t.functionId, to: t.nextId, label: label(t) }))) : html`<p class="hint">No triggers yet.</p>`}
<h2>Chains</h2>
<div class="scroll"><table><thead><tr><th scope="col">After</th><th scope="col">Runs</th><th scope="col">When status is</th><th scope="col">Passes result</th><th scope="col">Tags</th><th scope="col">Edit</th></tr></thead>
<tbody>${shown.map(
    (t) => html`<tr id="trigger-${t.id}"><td>${names.get(t.functionId) ?? t.functionId}</td><td>${names.get(t.nextId) ?? t.nextId}</td><td>${t.status}</td><td>${t.includeResult ? "yes" : "no"}</td><td>${tagChips(t.tags)}</td>
<td><form method="post" action="/console/triggers/${t.id}" class="row">${csrfField(c.var.page)}
<label for="st-${t.id}" style="margin:0">Status</label><input id="st-${t.id}" name="status" type="number" min="100" max="599" value="${t.status}" style="width:6rem">
<label style="margin:0;font-weight:400"><input type="checkbox" name="includeResult" value="true"${t.includeResult ? html` checked` : ""}> pass result</label>
<button type="submit" class="secondary">Save</button></form>
<form method="post" action="/console/triggers/${t.id}/delete">${csrfField(c.var.page)}<button type="submit" class="danger">Delete</button></form></td></tr>`,
  )}</tbody></table></div>
<section class="card" aria-labelledby="new-trigger"><h2 id="new-trigger">New trigger</h2>${errorBox(error)}
<form method="post" action="/console/triggers">${csrfField(c.var.page)}
<label for="tr-from">After this function finishes</label><select id="tr-from" class="wide" name="functionId">${options()}</select>
<label for="tr-status">…with this HTTP status</label><input id="tr-status" name="status" type="number" min="100" max="599" value="200">
<label for="tr-next">…run this function</label><select id="tr-next" class="wide" name="nextId">${options()}</select>
<label><input type="checkbox" name="includeResult" value="true"> Pass the first function's response on as the body</label>
<label for="tr-desc">Description</label><input id="tr-desc" name="description" type="text" maxlength="256">
<p><button type="submit">Create trigger</button></p></form></section>`;
  return c.html(layout("Triggers", { ...c.var.page, section: "triggers" }, body), status as 200);
}

export function registerTriggers(app: ConsoleApp) {
  app.get("/triggers", (c) => render(c));

  app.post("/triggers", async (c) => {
    const form = await formOf(c);
    const description = form.get("description");
    const r = await c.var.api.call("POST", "/v1/trigger", {
      json: { functionId: form.get("functionId"), nextId: form.get("nextId"), status: Number(form.get("status")), includeResult: form.get("includeResult") === "true", ...(description ? { description } : {}) },
    });
    return r.ok ? seeOther(c, "/console/triggers", "Trigger created.") : render(c, r.error, r.status);
  });

  app.post("/triggers/:id", async (c) => {
    const form = await formOf(c);
    const r = await c.var.api.call("PATCH", `/v1/trigger/${c.req.param("id")}`, { json: { status: Number(form.get("status")), includeResult: form.get("includeResult") === "true" } });
    return r.ok ? seeOther(c, "/console/triggers", "Trigger saved.") : render(c, r.error, r.status);
  });

  app.post("/triggers/:id/delete", async (c) => {
    const r = await c.var.api.call("DELETE", `/v1/trigger/${c.req.param("id")}`);
    return r.ok ? seeOther(c, "/console/triggers", "Trigger deleted.") : render(c, r.error, r.status);
  });
}
