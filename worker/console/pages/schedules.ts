import { html } from "hono/html";
import type { ConsoleApp, ConsoleContext } from "../context.js";
import { formOf, seeOther } from "../context.js";
import { csrfField, errorBox, layout, notice } from "../layout.js";
import type { ApiError } from "../api.js";
import { zones } from "../zones.js";
import { fmtLocal, upcoming } from "../../../shared/time/schedule-runs.js";

interface ScheduleItem {
  id: string;
  active: boolean;
  functionId: string;
  cron: string;
  timezone: string;
  description: string;
}
interface ScheduleDetail extends ScheduleItem {
  inlinePayload: { query: string; body: string; contentType: string | null } | null;
}

/** The next runs in the schedule's zone, as its timers will issue them. */
const nextRunsText = (s: ScheduleItem, count: number) => (s.active ? upcoming(s, count).map((t) => fmtLocal(t, s.timezone)).join(" · ") || "—" : "inactive");

async function allSchedules(c: ConsoleContext): Promise<ScheduleItem[]> {
  return (await c.var.api.get<{ results: ScheduleItem[] }>("/v1/scheduled/list?limit=999")).results;
}

async function render(c: ConsoleContext, problems: { create?: ApiError; row?: { id: string; error: ApiError } } = {}, status = 200) {
  const [list, fns] = await Promise.all([allSchedules(c), c.var.api.get<{ id: string; name: string }[]>("/v1/function/list")]);
  const names = new Map(fns.map((f) => [f.id, f.name]));
  const details = await Promise.all(list.map((s) => c.var.api.get<ScheduleDetail>(`/v1/scheduled/${s.id}`)));
  const tz = zones();
  const body = html`<h1>Schedules</h1>${notice(c.req.query("done"))}
<div class="scroll"><table><thead><tr><th scope="col">Function</th><th scope="col">Cron</th><th scope="col">Zone</th><th scope="col">Next runs</th><th scope="col">Payload</th><th scope="col">Actions</th></tr></thead>
<tbody>${details.map((s) => {
    const p = s.inlinePayload;
    return html`<tr id="schedule-${s.id}"><td><a href="/console/functions/${s.functionId}">${names.get(s.functionId) ?? s.functionId}</a>${s.description ? html`<div class="hint">${s.description}</div>` : ""}</td>
<td><code>${s.cron}</code></td><td>${s.timezone}</td><td class="next-runs">${nextRunsText(s, 3)}</td>
<td>${p ? html`${Math.floor((p.body.length * 3) / 4)} bytes${p.contentType ? html` of <code>${p.contentType}</code>` : ""}${p.query ? html`, <code>?${p.query}</code>` : ""}` : "—"}
<details><summary>Set payload</summary><form method="post" action="/console/schedules/${s.id}/payload">${csrfField(c.var.page)}
<label for="pq-${s.id}">Query string</label><input id="pq-${s.id}" name="query" type="text" value="${p?.query ?? ""}">
<label for="pt-${s.id}">Content-Type</label><input id="pt-${s.id}" name="contentType" type="text" value="${p?.contentType ?? "application/json"}">
<label for="pb-${s.id}">Body</label><textarea id="pb-${s.id}" name="body"></textarea>
<p><button type="submit" class="secondary">Save payload</button></p></form></details></td>
<td>${problems.row?.id === s.id ? errorBox(problems.row.error) : ""}
<form method="post" action="/console/schedules/${s.id}/toggle">${csrfField(c.var.page)}<button type="submit" class="secondary">${s.active ? "Deactivate" : "Activate"}</button></form>
<form method="post" action="/console/schedules/${s.id}/try">${csrfField(c.var.page)}<button type="submit" class="secondary">Try now</button></form>
<form method="post" action="/console/schedules/${s.id}/delete">${csrfField(c.var.page)}<button type="submit" class="danger">Delete</button></form></td></tr>`;
  })}</tbody></table></div>
${list.length ? "" : html`<p class="hint">No schedules yet.</p>`}
<section class="card" aria-labelledby="new-schedule"><h2 id="new-schedule">New schedule</h2>${errorBox(problems.create)}
<form method="post" action="/console/schedules">${csrfField(c.var.page)}
<label for="sc-fn">Function</label><select id="sc-fn" class="wide" name="functionId">${fns.map((f) => html`<option value="${f.id}">${f.name} (${f.id})</option>`)}</select>
<label for="sc-cron">Cron <span class="hint">(minute hour day-of-month month day-of-week, e.g. <code>0 9 * * mon-fri</code>)</span></label><input id="sc-cron" name="cron" type="text" required>
<label for="sc-tz">Time zone</label><select id="sc-tz" class="wide" name="timezone">${tz.map((z) => html`<option${z === "UTC" ? html` selected` : ""}>${z}</option>`)}</select>
<label for="sc-desc">Description</label><input id="sc-desc" name="description" type="text" maxlength="256">
<p><button type="submit">Create schedule</button></p></form></section>`;
  return c.html(layout("Schedules", { ...c.var.page, section: "schedules" }, body), status as 200);
}

export function registerSchedules(app: ConsoleApp) {
  app.get("/schedules", (c) => render(c));

  app.post("/schedules", async (c) => {
    const form = await formOf(c);
    const description = form.get("description");
    const r = await c.var.api.call("POST", "/v1/scheduled", { json: { functionId: form.get("functionId"), cron: form.get("cron"), timezone: form.get("timezone"), ...(description ? { description } : {}) } });
    return r.ok ? seeOther(c, "/console/schedules", "Schedule created.") : render(c, { create: r.error }, r.status);
  });

  app.post("/schedules/:id/toggle", async (c) => {
    const id = c.req.param("id");
    const s = await c.var.api.get<ScheduleDetail>(`/v1/scheduled/${id}`);
    const r = await c.var.api.call("PATCH", `/v1/scheduled/${id}`, { json: { active: !s.active, cron: s.cron, timezone: s.timezone } });
    return r.ok ? seeOther(c, "/console/schedules", s.active ? "Schedule deactivated." : "Schedule activated.") : render(c, { row: { id, error: r.error } }, r.status);
  });

  app.post("/schedules/:id/payload", async (c) => {
    const id = c.req.param("id");
    const form = await formOf(c);
    const query = form.get("query").replace(/^\?/, "");
    const contentType = form.get("contentType").trim();
    const r = await c.var.api.call("PUT", `/v1/scheduled/${id}/payload${query ? `?${query}` : ""}`, { body: form.get("body"), headers: contentType ? { "content-type": contentType } : {} });
    return r.ok ? seeOther(c, "/console/schedules", "Payload saved.") : render(c, { row: { id, error: r.error } }, r.status);
  });

  app.post("/schedules/:id/try", async (c) => {
    const id = c.req.param("id");
    const r = await c.var.api.call<{ id: string }>("POST", `/v1/scheduled/${id}/try`);
    return r.ok ? seeOther(c, `/console/tasks/${r.data.id}`, "Run issued now.") : render(c, { row: { id, error: r.error } }, r.status);
  });

  app.post("/schedules/:id/delete", async (c) => {
    const id = c.req.param("id");
    const r = await c.var.api.call("DELETE", `/v1/scheduled/${id}`);
    return r.ok ? seeOther(c, "/console/schedules", "Schedule deleted.") : render(c, { row: { id, error: r.error } }, r.status);
  });
}

