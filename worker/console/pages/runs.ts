import { html } from "hono/html";
import type { ConsoleApp, ConsoleContext } from "../context.js";
import { buildStatus, errorBox, isoOf, layout, taskStatus } from "../layout.js";
import { releaseButton, releaseRole } from "./release.js";
import type { Release } from "../../../shared/schemas/release.js";
import { BUILD_LOG_HEADERS } from "../../build-logs/text.js";

interface BuildDetail {
  id: string;
  functionId: string;
  status: string;
  timeline: { status: string; time: string }[];
  log: string[];
  logLines: number;
  evictedAt: string | null;
}
interface TaskDetail {
  id: string;
  functionId: string;
  issued: string | null;
  assigned: string | null;
  finished: string | null;
  progress: number;
  status: number;
  node: string | null;
  timeout: number;
  capabilities: { cpuCount: number; memSize: number; networkLatency: number; privileged: boolean };
  endpointId?: string | null;
  triggerId?: string | null;
  parentTaskId?: string | null;
  scheduledId?: string | null;
  attempts: number;
}

const secs = (s: string | null | undefined) => (s ? isoOf(Number(s) * 1000) : "—");
const qs = (o: Record<string, string | number | undefined>) => {
  const p = new URLSearchParams();
  for (const [k, v] of Object.entries(o)) if (v !== undefined && v !== "") p.set(k, String(v));
  const s = p.toString();
  return s ? `?${s}` : "";
};

/** A function picker for list filters. */
async function functionFilter(c: ConsoleContext, action: string, current: string | undefined) {
  const fns = await c.var.api.get<{ id: string; name: string }[]>("/v1/function/list");
  return html`<form method="get" action="${action}" class="row"><label for="fn-filter" style="margin:0">Function</label>
<select id="fn-filter" name="functionId"><option value="">all</option>${fns.map((f) => html`<option value="${f.id}"${f.id === current ? html` selected` : ""}>${f.name} (${f.id})</option>`)}</select>
<button class="secondary" type="submit">Filter</button></form>`;
}

export function registerBuildsAndTasks(app: ConsoleApp) {
  app.get("/builds", async (c) => {
    const functionId = c.req.query("functionId") || undefined;
    const page = Math.max(1, Number(c.req.query("page") ?? 1) || 1);
    const list = await c.var.api.get<{ pageCount: number; totalCount: number; results: { id: string; functionId: string; status: string; createdAt: string }[] }>(
      `/v1/build/list${qs({ functionId, page, limit: 20 })}`,
    );
    // Each function's release on this page, to mark the builds that run and offer to release the others.
    const fnIds = [...new Set(list.results.map((b) => b.functionId))];
    const releases = new Map(await Promise.all(fnIds.map(async (id) => [id, await c.var.api.get<Release>(`/v1/function/${id}/release`)] as const)));
    const body = html`<h1>Builds</h1>${await functionFilter(c, "/console/builds", functionId)}
<div class="scroll"><table><caption class="hint" style="text-align:left">${list.totalCount} build(s), page ${page} of ${Math.max(1, list.pageCount)}</caption>
<thead><tr><th scope="col">Build</th><th scope="col">Function</th><th scope="col">Status</th><th scope="col">Created</th><th scope="col">Release</th></tr></thead>
<tbody>${list.results.map((b) => html`<tr><td><a href="/console/builds/${b.id}">${b.id}</a>${releaseRole(releases.get(b.functionId), b.id)}</td><td><a href="/console/functions/${b.functionId}">${b.functionId}</a></td><td>${buildStatus(b.status)}</td><td>${b.createdAt}</td><td>${releaseButton(c.var.page, b.functionId, b, releases.get(b.functionId))}</td></tr>`)}</tbody></table></div>
<nav class="row" aria-label="Pages">${page > 1 ? html`<a href="/console/builds${qs({ functionId, page: page - 1 })}">← Newer</a>` : ""}${page < list.pageCount ? html`<a href="/console/builds${qs({ functionId, page: page + 1 })}">Older →</a>` : ""}</nav>`;
    return c.html(layout("Builds", { ...c.var.page, section: "builds" }, body));
  });

  // Polled by the deploy panel while a build runs.
  app.get("/builds/:file{[0-9a-z]+\\.json}", async (c) => c.json(await c.var.api.get<BuildDetail>(`/v1/build/${c.req.param("file").replace(/\.json$/, "")}`)));

  app.get("/builds/:id", async (c) => {
    const b = await c.var.api.get<BuildDetail>(`/v1/build/${c.req.param("id")}`);
    const body = html`<p><a href="/console/functions/${b.functionId}">← Function</a></p><h1>Build ${c.req.param("id")}</h1>
<p>Status: ${buildStatus(b.status)}</p>
${b.evictedAt ? html`<p id="build-evicted">Its zip and artifact were deleted at ${b.evictedAt}: only the last successful builds of a function keep theirs.</p>` : ""}
<h2>Timeline</h2><ol>${b.timeline.map((t) => html`<li>${t.status} — ${t.time}</li>`)}</ol>
<h2>Log</h2>${b.logLines > b.log.length ? html`<p class="hint">${b.logLines} lines; the middle ones are cut here. <a href="/console/builds/${b.id}/log">The whole log</a> (kept up to 4 MiB)</p>` : ""}
<pre aria-label="Build log">${b.log.join("\n") || "(no lines yet)"}</pre>`;
    return c.html(layout("Build", { ...c.var.page, section: "builds" }, body));
  });

  // The whole log as text, for a browser to show or save.
  app.get("/builds/:id/log", async (c) => c.body(await c.var.api.text(`/v1/build/${c.req.param("id")}/log`), 200, BUILD_LOG_HEADERS));

  app.get("/tasks", async (c) => {
    const functionId = c.req.query("functionId") || undefined;
    const before = c.req.query("before") || undefined;
    const tasks = await c.var.api.get<{ id: string; issued: string; progress: number; status: number }[]>(`/v1/task/list${qs({ functionId, before, limit: 25 })}`);
    const body = html`<h1>Tasks</h1>${await functionFilter(c, "/console/tasks", functionId)}
<div class="scroll"><table><thead><tr><th scope="col">Task</th><th scope="col">Status</th><th scope="col">Issued</th></tr></thead>
<tbody>${tasks.map((t) => html`<tr><td><a href="/console/tasks/${t.id}">${t.id}</a></td><td>${taskStatus(t.status, t.progress)}</td><td>${secs(t.issued)}</td></tr>`)}</tbody></table></div>
<nav class="row" aria-label="Pages">${before ? html`<a href="/console/tasks${qs({ functionId })}">← Newest</a>` : ""}${tasks.length === 25 ? html`<a href="/console/tasks${qs({ functionId, before: tasks.at(-1)!.id })}">Older →</a>` : ""}</nav>`;
    return c.html(layout("Tasks", { ...c.var.page, section: "tasks" }, body));
  });

  app.get("/tasks/:id", async (c) => {
    const id = c.req.param("id");
    const t = await c.var.api.get<TaskDetail>(`/v1/task/${id}`);
    const log = await c.var.api.call<{ log: string[] }>("GET", `/v1/task/${id}/log`);
    const result = t.status === 0 ? null : await c.var.api.raw("GET", `/v1/task/${id}/result`);
    const type = result?.headers.get("content-type") ?? "";
    let shown;
    if (!result) shown = html`<p>Not finished yet; <a href="/console/tasks/${id}">reload</a>.</p>`;
    else if (/^image\//i.test(type)) shown = html`<img src="/console/tasks/${id}/result" alt="The function's image response" style="max-width:100%">`;
    else if (result.status === 410) shown = errorBox(((await result.json()) as { error: { code: string; message: string } }).error);
    else shown = html`<p class="hint">${type || "no Content-Type"}</p><pre aria-label="Result body">${(await result.text()).slice(0, 64 * 1024)}</pre>`;
    const body = html`<p><a href="/console/functions/${t.functionId}">← Function</a></p><h1>Task ${id}</h1>
<dl class="card"><dt>Status</dt><dd>${taskStatus(t.status, t.progress)}</dd><dt>Progress</dt><dd>${t.progress}%</dd>
<dt>Issued</dt><dd>${secs(t.issued)}</dd><dt>Assigned</dt><dd>${secs(t.assigned)}</dd><dt>Finished</dt><dd>${secs(t.finished)}</dd>
<dt>Node</dt><dd>${t.node ?? "—"}</dd><dt>Timeout</dt><dd>${t.timeout} s</dd><dt>Attempts</dt><dd>${t.attempts}</dd>
<dt>Capabilities</dt><dd>${t.capabilities.cpuCount} CPU, ${t.capabilities.memSize} MiB, ${t.capabilities.networkLatency} ms${t.capabilities.privileged ? ", privileged" : ""}</dd>
${t.endpointId ? html`<dt>Endpoint</dt><dd><a href="/console/endpoints/${t.endpointId}">${t.endpointId}</a></dd>` : ""}
${t.parentTaskId ? html`<dt>Started by</dt><dd><a href="/console/tasks/${t.parentTaskId}">${t.parentTaskId}</a></dd>` : ""}
${t.triggerId ? html`<dt>Trigger</dt><dd><a href="/console/triggers#trigger-${t.triggerId}">${t.triggerId}</a></dd>` : ""}
${t.scheduledId ? html`<dt>Schedule</dt><dd><a href="/console/schedules#schedule-${t.scheduledId}">${t.scheduledId}</a></dd>` : ""}</dl>
<h2>Result${result ? html` <span class="status ${result.status < 400 ? "ok" : "bad"}">${result.status}</span>` : ""}</h2>${shown}
${taskLog(id, t.status === 0, log.ok ? log.data.log.join("\n") || "(no log lines)" : log.error.message)}`;
    return c.html(layout(`Task ${id}`, { ...c.var.page, section: "tasks" }, body, t.status === 0));
  });

  // A running task's log as Server-Sent Events, for the task page's EventSource (which sends the
  // session cookie, not a token): the API's follow, called in process with the session's token.
  app.get("/tasks/:id/log/live", async (c) => {
    const res = await c.var.api.raw("GET", `/v1/task/${c.req.param("id")}/log?follow=1`, { headers: { accept: "text/event-stream" } });
    return new Response(res.body, { status: res.status, headers: res.headers });
  });

  // The result replayed for an <img> or a download, sandboxed: nothing a function returns runs here.
  app.get("/tasks/:id/result", async (c) => {
    const res = await c.var.api.raw("GET", `/v1/task/${c.req.param("id")}/result`);
    return new Response(res.body, {
      status: res.status,
      headers: { "content-type": res.headers.get("content-type") ?? "application/octet-stream", "content-security-policy": "sandbox; default-src 'none'", "x-content-type-options": "nosniff" },
    });
  });
}

/** The task page's log: a running task's follows live (console.js), a finished one's is as recorded. */
function taskLog(id: string, running: boolean, text: string) {
  if (!running) return html`<h2>Log</h2><pre aria-label="Task log">${text}</pre>`;
  return html`<h2>Log <span class="hint" id="task-log-state" aria-live="polite">live</span></h2><pre aria-label="Task log" id="task-log" data-live="/console/tasks/${id}/log/live">${text}</pre>`;
}
