import { html } from "hono/html";
import type { ConsoleApp, ConsoleContext } from "../context.js";
import { formOf, seeOther } from "../context.js";
import { buildStatus, csrfField, errorBox, isoOf, layout, notice, tagChips, taskStatus, type Html } from "../layout.js";
import type { ApiError } from "../api.js";
import { tagPicker, type TagItem } from "./functions.js";
import { resultPanel, type InvokeOutcome } from "./invoke-result.js";
import { releaseButton, releaseRole, releaseSection } from "./release.js";
import type { Release } from "../../../shared/schemas/release.js";
import { configSection, registerFunctionConfig } from "./function-config.js";
import { networkSection, registerNetwork } from "./network.js";
import { registerRetries, retrySection } from "./retries.js";

interface FnDetail {
  id: string;
  name: string;
  description: string;
  lang: string;
  paused: boolean;
  tags: TagItem[];
  capabilities: { timeout: number; cpuCount: number; memSize: number; networkLatency: number; privileged: boolean };
  metrics: { todaysTasks: number; pendingTasks: number; weekTasks: number; completedTasks: number };
}
interface Page<T> {
  totalCount: number;
  results: T[];
}

async function loadFunction(c: ConsoleContext, id: string) {
  const api = c.var.api;
  const [fn, tags, builds, tasks, endpoints, release] = await Promise.all([
    api.get<FnDetail>(`/v1/function/${id}`),
    api.get<TagItem[]>("/v1/tag/list"),
    api.get<Page<{ id: string; status: string; createdAt: string }>>(`/v1/build/list?functionId=${id}&limit=5`),
    api.get<{ id: string; issued: string; progress: number; status: number }[]>(`/v1/task/list?functionId=${id}&limit=10`),
    api.get<Page<{ id: string; description: string }>>(`/v1/endpoint/list?functionId=${id}&limit=999`),
    api.get<Release>(`/v1/function/${id}/release`),
  ]);
  return { fn, tags, builds, tasks, endpoints, release };
}

interface Problems {
  edit?: ApiError;
  capabilities?: ApiError;
  invoke?: ApiError;
  endpoint?: ApiError;
  config?: ApiError;
  network?: ApiError;
  retries?: ApiError;
}

async function renderFunction(c: ConsoleContext, id: string, o: { problems?: Problems; outcome?: InvokeOutcome; status?: number } = {}) {
  const { fn, tags, builds, tasks, endpoints, release } = await loadFunction(c, id);
  const p = o.problems ?? {};
  const caps = fn.capabilities;
  const [config, network, retries] = await Promise.all([configSection(c, fn.id, p.config), networkSection(c, fn.id, p.network), retrySection(c, fn.id, p.retries)]);
  const body = html`<p><a href="/console">← Functions</a></p>
<h1>${fn.name} <span class="hint">(${fn.lang}${fn.paused ? ", paused" : ""})</span></h1>
${notice(c.req.query("done"))}
<div class="row">
<form method="post" action="/console/functions/${fn.id}/pause">${csrfField(c.var.page)}<button type="submit" class="secondary">${fn.paused ? "Resume" : "Pause"}</button></form>
<a class="button" style="background:#b3261e;border-color:#b3261e" href="/console/functions/${fn.id}/delete">Delete…</a>
</div>
<p>${tagChips(fn.tags)}${fn.description ? html` ${fn.description}` : ""}</p>
<dl class="card"><dt>Tasks today</dt><dd>${fn.metrics.todaysTasks}</dd><dt>Pending</dt><dd>${fn.metrics.pendingTasks}</dd><dt>Last 7 days</dt><dd>${fn.metrics.weekTasks}</dd><dt>Completed</dt><dd>${fn.metrics.completedTasks}</dd><dt>Id</dt><dd><code>${fn.id}</code></dd></dl>

<section class="card" aria-labelledby="deploy-h"><h2 id="deploy-h">Deploy</h2>
<div id="deploy" data-action="/console/functions/${fn.id}/deploy">
<div class="drop"><label for="zip">Drop a zip of the function's files here (select the files inside its folder and zip those, not the folder), or choose one</label><input id="zip" type="file" accept=".zip,application/zip"></div>
<progress hidden value="0" max="1" aria-label="Upload progress"></progress>
<p id="deploy-state" role="status" aria-live="polite"></p>
<div id="build-progress" hidden>
<h3 style="font-size:1rem">Timeline</h3><pre id="build-timeline" aria-label="Build timeline"></pre>
<h3 style="font-size:1rem">Log</h3><pre id="build-log" aria-label="Build log" aria-live="polite"></pre>
</div>
</div></section>

${releaseSection(c.var.page, fn.id, release, builds.results.filter((b) => b.status === "SUCCESS").map((b) => b.id))}

${retries}

<section class="card" aria-labelledby="invoke-h"><h2 id="invoke-h">Invoke</h2>
${errorBox(p.invoke)}
${release.buildId ? "" : html`<p id="invoke-needs-build" class="hint">No successful build yet: deploy a build first (drop a zip of the function's files on Deploy above). Invoke appears once a build succeeds.</p>`}
<form id="invoke-form" method="post" action="/console/functions/${fn.id}/invoke"${release.buildId ? "" : html` hidden`}>${csrfField(c.var.page)}
<label for="inv-query">Query string <span class="hint">(e.g. name=Ada&amp;n=2)</span></label><input id="inv-query" name="query" type="text">
<label for="inv-type">Content-Type</label><input id="inv-type" name="contentType" type="text" value="application/json">
<label for="inv-body">Body</label><textarea id="inv-body" name="body"></textarea>
<p><button type="submit">Invoke</button> <span class="hint">waits up to 30 s for the response</span></p>
</form>
${o.outcome ? resultPanel(o.outcome) : ""}
</section>

<section class="card" aria-labelledby="edit-h"><h2 id="edit-h">Edit</h2>
${errorBox(p.edit)}
<form method="post" action="/console/functions/${fn.id}/edit">${csrfField(c.var.page)}
<label for="ed-name">Name</label><input id="ed-name" name="name" type="text" value="${fn.name}" required>
<label for="ed-desc">Description</label><input id="ed-desc" name="description" type="text" maxlength="80" value="${fn.description}">
${tagPicker(tags, fn.tags.map((t) => t.id))}
<p><button type="submit">Save</button></p></form></section>

<section class="card" aria-labelledby="caps-h"><h2 id="caps-h">Capabilities</h2>
${errorBox(p.capabilities)}
<form method="post" action="/console/functions/${fn.id}/capabilities">${csrfField(c.var.page)}
<label for="cap-timeout">Timeout <span class="hint">(seconds, 10–120)</span></label><input id="cap-timeout" name="timeout" type="number" min="10" max="120" step="1" value="${caps.timeout}">
<label for="cap-cpu">CPUs <span class="hint">(0–4; 0 = the node's default)</span></label><input id="cap-cpu" name="cpuCount" type="number" min="0" max="4" step="0.1" value="${caps.cpuCount}">
<label for="cap-mem">Memory <span class="hint">(MiB, 0–2048; 0 = the node's default)</span></label><input id="cap-mem" name="memSize" type="number" min="0" max="2048" step="1" value="${caps.memSize}">
<label><input type="checkbox" name="privileged" value="true"${caps.privileged ? html` checked` : ""}> Privileged <span class="hint">(runs only on nodes that allow it; needs the operator's grant for the account)</span></label>
<p class="hint">Network latency of the function: ${caps.networkLatency} ms (read-only).</p>
<p><button type="submit">Save capabilities</button></p></form></section>

${network}

${config}

<section class="card" aria-labelledby="ep-h"><h2 id="ep-h">Public endpoints</h2>
${errorBox(p.endpoint)}
${endpoints.results.length ? html`<ul>${endpoints.results.map((e) => html`<li><a href="/console/endpoints/${e.id}"><code>/gc/${e.id}</code></a> ${e.description}</li>`)}</ul>` : html`<p class="hint">None yet.</p>`}
<form method="post" action="/console/functions/${fn.id}/endpoints">${csrfField(c.var.page)}<button type="submit" class="secondary">New public endpoint</button></form>
</section>

<section class="card" aria-labelledby="runs-h"><h2 id="runs-h">Recent builds and tasks</h2>
<div class="scroll"><table><thead><tr><th scope="col">Build</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col">Release</th></tr></thead>
<tbody>${builds.results.map((b) => html`<tr><td><a href="/console/builds/${b.id}">${b.id}</a>${releaseRole(release, b.id)}</td><td>${buildStatus(b.status)}</td><td>${b.createdAt}</td><td>${releaseButton(c.var.page, fn.id, b, release)}</td></tr>`)}</tbody></table></div>
<p><a href="/console/builds?functionId=${fn.id}">All builds</a></p>
<div class="scroll"><table><thead><tr><th scope="col">Task</th><th scope="col">Status</th><th scope="col">Issued</th></tr></thead>
<tbody>${tasks.map((t) => html`<tr><td><a href="/console/tasks/${t.id}">${t.id}</a></td><td>${taskStatus(t.status, t.progress)}</td><td>${isoOf(Number(t.issued) * 1000)}</td></tr>`)}</tbody></table></div>
<p><a href="/console/tasks?functionId=${fn.id}">All tasks</a></p>
</section>`;
  return c.html(layout(fn.name, { ...c.var.page, section: "functions" }, body, true), (o.status ?? 200) as 200);
}

/** What deleting a function takes with it, named before the person confirms. */
async function renderDelete(c: ConsoleContext, id: string): Promise<Response> {
  const api = c.var.api;
  const [fn, endpoints, asFirst, builds, schedules] = await Promise.all([
    api.get<FnDetail>(`/v1/function/${id}`),
    api.get<Page<unknown>>(`/v1/endpoint/list?functionId=${id}&limit=3`),
    api.get<Page<unknown>>(`/v1/trigger/list?functionId=${id}&limit=3`),
    api.get<Page<unknown>>(`/v1/build/list?functionId=${id}&limit=1`),
    api.get<Page<unknown>>(`/v1/scheduled/list?functionId=${id}&limit=3`),
  ]);
  const body: Html = html`<h1>Delete ${fn.name}?</h1>
<div class="error"><p>This deletes the function <strong>${fn.name}</strong> and with it:</p>
<ul><li>${endpoints.totalCount} public endpoint(s) (their links stop working)</li>
<li>${asFirst.totalCount} trigger(s) that start after it, and every trigger that starts it</li>
<li>${schedules.totalCount} schedule(s)</li>
<li>${builds.totalCount} build(s) and their stored code, and its storage (GC-Storage)</li>
<li>${fn.metrics.pendingTasks} pending task(s), cancelled</li></ul>
<p>Finished tasks stay readable. This cannot be undone.</p></div>
<form method="post" action="/console/functions/${fn.id}/delete">${csrfField(c.var.page)}
<div class="row"><button class="danger" type="submit">Delete ${fn.name}</button> <a href="/console/functions/${fn.id}">Cancel</a></div></form>`;
  return c.html(layout(`Delete ${fn.name}`, { ...c.var.page, section: "functions" }, body));
}

const num = (v: string) => (v.trim() === "" ? undefined : Number(v));

export function registerFunction(app: ConsoleApp) {
  app.get("/functions/:id", (c) => renderFunction(c, c.req.param("id")));
  app.get("/functions/:id/delete", (c) => renderDelete(c, c.req.param("id")));
  registerFunctionConfig(app, (c, id, problem, status) => renderFunction(c, id, { problems: { config: problem }, status }));
  registerNetwork(app, (c, id, problem, status) => renderFunction(c, id, { problems: { network: problem }, status }));
  registerRetries(app, (c, id, problem, status) => renderFunction(c, id, { problems: { retries: problem }, status }));

  app.post("/functions/:id/edit", async (c) => {
    const id = c.req.param("id");
    const form = await formOf(c);
    const r = await c.var.api.call("PATCH", `/v1/function/${id}`, { json: { name: form.get("name"), description: form.get("description"), tag: form.all("tag") } });
    return r.ok ? seeOther(c, `/console/functions/${id}`, "Saved.") : renderFunction(c, id, { problems: { edit: r.error }, status: r.status });
  });

  app.post("/functions/:id/capabilities", async (c) => {
    const id = c.req.param("id");
    const form = await formOf(c);
    const json = { timeout: num(form.get("timeout")), cpuCount: num(form.get("cpuCount")), memSize: num(form.get("memSize")), privileged: form.get("privileged") === "true" };
    const r = await c.var.api.call("POST", `/v1/function/${id}/capabilities`, { json });
    return r.ok ? seeOther(c, `/console/functions/${id}`, "Capabilities saved.") : renderFunction(c, id, { problems: { capabilities: r.error }, status: r.status });
  });

  app.post("/functions/:id/pause", async (c) => {
    const id = c.req.param("id");
    const r = await c.var.api.call("POST", `/v1/function/${id}/togglePause`);
    if (!r.ok) return renderFunction(c, id, { problems: { edit: r.error }, status: r.status });
    const fn = await c.var.api.get<FnDetail>(`/v1/function/${id}`);
    return seeOther(c, `/console/functions/${id}`, fn.paused ? "Paused: new tasks wait, public endpoints answer 503." : "Resumed.");
  });

  app.post("/functions/:id/delete", async (c) => {
    const id = c.req.param("id");
    const r = await c.var.api.call("DELETE", `/v1/function/${id}`);
    return r.ok ? seeOther(c, "/console", "Function deleted.") : renderFunction(c, id, { problems: { edit: r.error }, status: r.status });
  });

  app.post("/functions/:id/endpoints", async (c) => {
    const id = c.req.param("id");
    const r = await c.var.api.call<{ id: string }>("POST", `/v1/endpoint/${id}`, { json: {} });
    return r.ok ? seeOther(c, `/console/endpoints/${r.data.id}`, "Endpoint created. Set its restrictions below.") : renderFunction(c, id, { problems: { endpoint: r.error }, status: r.status });
  });

  // The zip streams through to the build operation; the browser shows upload progress.
  app.post("/functions/:id/deploy", async (c) => {
    const headers: Record<string, string> = { "content-type": c.req.header("content-type") ?? "" };
    const length = c.req.header("content-length");
    if (length) headers["content-length"] = length;
    const res = await c.var.api.raw("POST", `/v1/build/${c.req.param("id")}?arch=amd64`, { body: c.req.raw.body, headers });
    return new Response(res.body, { status: res.status, headers: { "content-type": res.headers.get("content-type") ?? "application/json" } });
  });

  app.post("/functions/:id/invoke", async (c) => {
    const id = c.req.param("id");
    const form = await formOf(c);
    const query = form.get("query").replace(/^\?/, "");
    const contentType = form.get("contentType").trim();
    const bodyText = form.get("body");
    const res = await c.var.api.raw("POST", `/v1/task/${id}${query ? `?${query}` : ""}`, {
      body: bodyText === "" ? null : bodyText,
      headers: { prefer: "wait=30", ...(contentType && bodyText !== "" ? { "content-type": contentType } : {}) },
    });
    if (res.headers.get("preference-applied") !== "wait") {
      const text = await res.text();
      if (!res.ok) {
        let error: ApiError = { code: "error", message: `the API answered ${res.status}` };
        try {
          error = (JSON.parse(text) as { error: ApiError }).error;
        } catch {
          /* keep the generic message */
        }
        return renderFunction(c, id, { problems: { invoke: error }, status: res.status });
      }
      const { id: taskId } = JSON.parse(text) as { id: string };
      return renderFunction(c, id, { outcome: { taskId, pending: true } });
    }
    const taskId = res.headers.get("x-task-id") ?? "";
    const bytes = new Uint8Array(await res.arrayBuffer());
    const log = await c.var.api.get<{ log: string[] }>(`/v1/task/${taskId}/log`).catch(() => ({ log: [] as string[] }));
    const headers: [string, string][] = [];
    res.headers.forEach((v, k) => {
      if (!/^(preference-applied|x-task-id|location|vary|content-security-policy|x-content-type-options)$/i.test(k)) headers.push([k, v]);
    });
    return renderFunction(c, id, { outcome: { taskId, pending: false, status: res.status, headers, bytes, log: log.log } });
  });
}
