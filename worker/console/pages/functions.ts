import { html } from "hono/html";
import type { ConsoleApp, ConsoleContext } from "../context.js";
import { formOf, seeOther } from "../context.js";
import { buildStatus, csrfField, errorBox, isoOf, layout, notice, safeColor, tagChips, type Html } from "../layout.js";
import { sparkline } from "../charts.js";
import { dailyTasks, lastBuildStatus } from "../queries.js";
import type { ApiError } from "../api.js";

interface FnItem {
  id: string;
  name: string;
  description: string;
  lang: string;
  tags: { id: string; name: string; color: string }[];
  createdAt: string;
}
export interface TagItem {
  id: string;
  name: string;
  color: string;
}

const LANGS: [string, string][] = [["PY", "Python"], ["JS", "Node.js"], ["GO", "Go"], ["RB", "Ruby"], ["RS", "Rust"], ["CS", "C#"]];

/** Tag checkboxes for a record's form; `checked` are the ids attached now. */
export function tagPicker(tags: TagItem[], checked: string[]): Html {
  if (!tags.length) return html`<p class="hint">No tags yet (<a href="/console/tags">create one</a>).</p>`;
  return html`<fieldset><legend>Tags</legend>${tags.map(
    (t) => html`<label style="display:inline-flex;gap:.3rem;font-weight:400;margin-right:1rem"><input type="checkbox" name="tag" value="${t.id}"${checked.includes(t.id) ? html` checked` : ""}> <span class="tag" style="background:${safeColor(t.color)}">${t.name}</span></label>`,
  )}</fieldset>`;
}

/** Filter by tag: a small GET form, usable without script. */
export function tagFilter(action: string, tags: TagItem[], current: string | undefined): Html {
  return html`<form method="get" action="${action}" class="row"><label for="tag-filter" style="margin:0">Tag</label>
<select id="tag-filter" name="tag"><option value="">any</option>${tags.map((t) => html`<option value="${t.id}"${t.id === current ? html` selected` : ""}>${t.name}</option>`)}</select>
<button class="secondary" type="submit">Filter</button></form>`;
}

export function registerFunctions(app: ConsoleApp) {
  const render = async (c: ConsoleContext, error?: ApiError, status = 200) => {
    const tag = c.req.query("tag") || undefined;
    const api = c.var.api;
    const [fns, tags] = await Promise.all([api.get<FnItem[]>(`/v1/function/list${tag ? `?tag=${encodeURIComponent(tag)}` : ""}`), api.get<TagItem[]>("/v1/tag/list")]);
    const ids = fns.map((f) => f.id);
    const [builds, daily] = await Promise.all([lastBuildStatus(c.var.db, c.var.accountId, ids), dailyTasks(c.env, c.var.db, c.var.accountId, 7)]);
    const body = html`<h1>Functions</h1>
${notice(c.req.query("done"))}
<div class="row" style="justify-content:space-between">${tagFilter("/console", tags, tag)}</div>
<div class="scroll"><table>
<caption class="hint" style="text-align:left">${fns.length} function${fns.length === 1 ? "" : "s"}${tag ? " with this tag" : ""}</caption>
<thead><tr><th scope="col">Name</th><th scope="col">Language</th><th scope="col">Tags</th><th scope="col">Last build</th><th scope="col">Tasks today</th><th scope="col">Last 7 days</th><th scope="col">Created</th></tr></thead>
<tbody>${fns.map((f) => {
      const series = daily.byFunction.get(f.id) ?? new Array<number>(7).fill(0);
      return html`<tr><td><a href="/console/functions/${f.id}">${f.name}</a>${f.description ? html`<div class="hint">${f.description}</div>` : ""}</td>
<td>${f.lang}</td><td>${tagChips(f.tags)}</td><td>${buildStatus(builds.get(f.id))}</td><td>${series.at(-1) ?? 0}</td>
<td>${sparkline(series, `${f.name}: ${series.join(", ")} tasks over the last 7 days`)}</td><td>${isoOf(Number(f.createdAt) * 1000)}</td></tr>`;
    })}</tbody></table></div>
<section class="card" aria-labelledby="new-fn"><h2 id="new-fn">New function</h2>
${errorBox(error)}
<form method="post" action="/console/functions">${csrfField(c.var.page)}
<label for="fn-name">Name <span class="hint">(letters and digits)</span></label><input id="fn-name" name="name" type="text" required>
<label for="fn-desc">Description <span class="hint">(optional, at most 80 characters)</span></label><input id="fn-desc" name="description" type="text" maxlength="80">
<label for="fn-lang">Language</label><select id="fn-lang" name="lang">${LANGS.map(([code, name]) => html`<option value="${code}">${name}</option>`)}</select>
${tagPicker(tags, [])}
<p><button type="submit">Create function</button></p>
</form></section>`;
    return c.html(layout("Functions", { ...c.var.page, section: "functions" }, body), status as 200);
  };

  app.get("/", (c) => render(c));

  app.post("/functions", async (c) => {
    const form = await formOf(c);
    const description = form.get("description");
    const r = await c.var.api.call<{ id: string }>("POST", "/v1/function", {
      json: { name: form.get("name"), lang: form.get("lang"), type: "DOCKER", ...(description ? { description } : {}), ...(form.all("tag").length ? { tag: form.all("tag") } : {}) },
    });
    if (!r.ok) return render(c, r.error, r.status);
    return seeOther(c, `/console/functions/${r.data.id}`, "Function created. Deploy a zip to build it.");
  });
}
