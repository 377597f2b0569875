import { html } from "hono/html";
import type { ConsoleApp, ConsoleContext } from "../context.js";
import { formOf, seeOther } from "../context.js";
import { csrfField, errorBox, layout, notice, tagChips } from "../layout.js";
import type { ApiError } from "../api.js";
import { tagFilter, tagPicker, type TagItem } from "./functions.js";
import { zones } from "../zones.js";

interface EndpointDetail {
  functionId: string;
  description: string;
  tags: TagItem[];
  dailyLimit: number;
  origin: string[];
  ip: string[];
  timeLimit: { from: string; to: string; timezone: string } | null;
  createdAt: string;
}
interface EndpointItem {
  id: string;
  functionId: string;
  description: string;
  tags: TagItem[];
  createdAt: string;
}
interface Metrics {
  todayTasks: number;
  pendingTasks: number;
  weekTasks: number;
}

const lines = (v: string) => v.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean);

async function renderEndpoint(c: ConsoleContext, id: string, error?: ApiError, status = 200, typed?: Record<string, string>) {
  const api = c.var.api;
  const [e, m, tags] = await Promise.all([api.get<EndpointDetail>(`/v1/endpoint/${id}`), api.get<Metrics>(`/v1/endpoint/${id}/metrics`), api.get<TagItem[]>("/v1/tag/list")]);
  const link = `/gc/${id}`;
  // After a refusal the form shows what the person typed, with the API's message above it.
  const v = typed ?? {
    description: e.description, dailyLimit: String(e.dailyLimit), origin: e.origin.join("\n"), ip: e.ip.join("\n"),
    from: e.timeLimit?.from ?? "", to: e.timeLimit?.to ?? "", timezone: e.timeLimit?.timezone ?? "UTC",
  };
  const body = html`<p><a href="/console/endpoints">← Endpoints</a></p><h1>Endpoint <code>${id}</code></h1>
${notice(c.req.query("done"))}
<div class="card"><p>Public link: <a id="endpoint-link" href="${link}">${new URL(link, c.req.url).href}</a> <button type="button" class="secondary" data-copy="${link}">Copy link</button></p>
<p>Function: <a href="/console/functions/${e.functionId}">${e.functionId}</a> · ${tagChips(e.tags)}</p>
<dl><dt>Calls today</dt><dd id="calls-today">${m.todayTasks}</dd><dt>Calls in the last 7 days</dt><dd id="calls-week">${m.weekTasks}</dd><dt>Pending</dt><dd>${m.pendingTasks}</dd></dl></div>
<section class="card" aria-labelledby="restr-h"><h2 id="restr-h">Restrictions</h2>
${errorBox(error)}
<form method="post" action="/console/endpoints/${id}">${csrfField(c.var.page)}
<label for="ep-desc">Description</label><input id="ep-desc" name="description" type="text" maxlength="256" value="${v.description}">
<label for="ep-limit">Daily limit <span class="hint">(-1 unlimited, 0 refuses every call)</span></label><input id="ep-limit" name="dailyLimit" type="number" min="-1" step="1" value="${v.dailyLimit}">
<label for="ep-origin">Allowed origins <span class="hint">(one per line, https://host[:port]; empty allows any)</span></label><textarea id="ep-origin" name="origin">${v.origin}</textarea>
<label for="ep-ip">Allowed IPv4 addresses <span class="hint">(one per line; empty allows any)</span></label><textarea id="ep-ip" name="ip">${v.ip}</textarea>
<fieldset><legend>Time window <span class="hint">(leave both times empty for none)</span></legend>
<label for="ep-from">From (HH:MM)</label><input id="ep-from" name="from" type="text" inputmode="numeric" placeholder="08:00" value="${v.from}">
<label for="ep-to">To (HH:MM)</label><input id="ep-to" name="to" type="text" inputmode="numeric" placeholder="20:00" value="${v.to}">
<label for="ep-tz">Time zone</label><select id="ep-tz" class="wide" name="timezone">${zones().map((z) => html`<option${z === v.timezone ? html` selected` : ""}>${z}</option>`)}</select>
</fieldset>
${tagPicker(tags, e.tags.map((t) => t.id))}
<p><button type="submit">Save restrictions</button></p></form></section>
<form method="post" action="/console/endpoints/${id}/delete">${csrfField(c.var.page)}<button class="danger" type="submit">Delete endpoint</button></form>`;
  return c.html(layout("Endpoint", { ...c.var.page, section: "endpoints" }, body, true), status as 200);
}

export function registerEndpoints(app: ConsoleApp) {
  app.get("/endpoints", async (c) => {
    const tag = c.req.query("tag") || undefined;
    const [list, tags] = await Promise.all([
      c.var.api.get<{ totalCount: number; results: EndpointItem[] }>("/v1/endpoint/list?limit=999"),
      c.var.api.get<TagItem[]>("/v1/tag/list"),
    ]);
    const shown = tag ? list.results.filter((e) => e.tags.some((t) => t.id === tag)) : list.results;
    const metrics = await Promise.all(shown.map((e) => c.var.api.get<Metrics>(`/v1/endpoint/${e.id}/metrics`)));
    const body = html`<h1>Public endpoints</h1>${notice(c.req.query("done"))}${tagFilter("/console/endpoints", tags, tag)}
<div class="scroll"><table><thead><tr><th scope="col">Link</th><th scope="col">Function</th><th scope="col">Description</th><th scope="col">Tags</th><th scope="col">Today</th><th scope="col">7 days</th></tr></thead>
<tbody>${shown.map(
      (e, i) => html`<tr><td><a href="/console/endpoints/${e.id}"><code>/gc/${e.id}</code></a> <button type="button" class="secondary" data-copy="/gc/${e.id}">Copy</button></td>
<td><a href="/console/functions/${e.functionId}">${e.functionId}</a></td><td>${e.description}</td><td>${tagChips(e.tags)}</td><td>${metrics[i]!.todayTasks}</td><td>${metrics[i]!.weekTasks}</td></tr>`,
    )}</tbody></table></div><p class="hint">New endpoints are created from a function's page.</p>`;
    return c.html(layout("Endpoints", { ...c.var.page, section: "endpoints" }, body, true));
  });

  app.get("/endpoints/:id", (c) => renderEndpoint(c, c.req.param("id")));

  app.post("/endpoints/:id", async (c) => {
    const id = c.req.param("id");
    const form = await formOf(c);
    const typed = { description: form.get("description"), dailyLimit: form.get("dailyLimit"), origin: form.get("origin"), ip: form.get("ip"), from: form.get("from"), to: form.get("to"), timezone: form.get("timezone") };
    const limit = typed.dailyLimit.trim();
    const json = {
      description: typed.description,
      dailyLimit: limit === "" ? -1 : Number(limit),
      origin: lines(typed.origin),
      ip: lines(typed.ip),
      timeLimit: typed.from || typed.to ? { from: typed.from, to: typed.to, timezone: typed.timezone } : null,
      tag: form.all("tag"),
    };
    const r = await c.var.api.call("PATCH", `/v1/endpoint/${id}`, { json });
    return r.ok ? seeOther(c, `/console/endpoints/${id}`, "Restrictions saved.") : renderEndpoint(c, id, r.error, r.status, typed);
  });

  app.post("/endpoints/:id/delete", async (c) => {
    const r = await c.var.api.call("DELETE", `/v1/endpoint/${c.req.param("id")}`);
    return r.ok ? seeOther(c, "/console/endpoints", "Endpoint deleted.") : renderEndpoint(c, c.req.param("id"), r.error, r.status);
  });
}
