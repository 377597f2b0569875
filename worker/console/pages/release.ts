import { html } from "hono/html";
import type { ConsoleApp, ConsoleContext } from "../context.js";
import type { ApiError } from "../api.js";
import { formOf, seeOther } from "../context.js";
import { csrfField, errorBox, layout, type Html, type PageContext } from "../layout.js";
import type { Release } from "../../../shared/schemas/release.js";

/** Where a release form goes: the console's own route, which calls PUT …/release. */
const releaseAction = (functionId: string) => `/console/functions/${functionId}/release`;

/** What a build is to its function's release, for its row: "runs now", "canary N %", or nothing. */
export function releaseRole(r: Release | undefined, buildId: string): Html {
  if (!r) return html``;
  if (r.buildId === buildId) return html` <span class="status ok">${r.pinned ? "pinned" : "runs now"}</span>`;
  if (r.canary?.buildId === buildId) return html` <span class="status wait">canary ${r.canary.weight} %</span>`;
  return html``;
}

/** "Release this build" for a successful build's row: pins it, dropping any canary (as a PUT does). */
export function releaseButton(page: PageContext, functionId: string, b: { id: string; status: string }, r?: Release): Html {
  if (b.status !== "SUCCESS" || (r?.pinned && r.buildId === b.id && !r.canary)) return html``;
  return html`<form method="post" action="${releaseAction(functionId)}" style="display:inline">${csrfField(page)}<input type="hidden" name="buildId" value="${b.id}"><button type="submit" class="secondary">Release this build</button></form>`;
}

/** The function page's section: which build runs, any canary, and the changes one click away. */
export function releaseSection(page: PageContext, functionId: string, r: Release, successful: string[]): Html {
  const keep = r.pinned ? r.buildId! : "";
  const canaryChoices = successful.filter((id) => id !== r.buildId);
  return html`<section class="card" aria-labelledby="release-h"><h2 id="release-h">Release</h2>
<dl><dt>Runs</dt><dd>${r.buildId ? html`<a href="/console/builds/${r.buildId}"><code>${r.buildId}</code></a> ${r.pinned ? "(pinned)" : "(the newest successful build)"}` : html`<span class="hint">no successful build yet</span>`}</dd>
<dt>Canary</dt><dd>${r.canary ? html`<a href="/console/builds/${r.canary.buildId}"><code>${r.canary.buildId}</code></a> takes ${r.canary.weight} % of new tasks` : "none"}</dd></dl>
<div class="row">
${r.pinned || r.canary ? html`<form method="post" action="${releaseAction(functionId)}">${csrfField(page)}<input type="hidden" name="buildId" value=""><button type="submit" class="secondary">Follow the newest build</button></form>` : ""}
${r.canary ? html`<form method="post" action="${releaseAction(functionId)}">${csrfField(page)}<input type="hidden" name="buildId" value="${keep}"><button type="submit" class="secondary">Remove the canary</button></form>` : ""}
${r.buildId ? html`<form method="post" action="/console/functions/${functionId}/rollback">${csrfField(page)}<button type="submit" class="secondary">Roll back to the build before</button></form>` : ""}
</div>
${canaryChoices.length ? html`<form method="post" action="${releaseAction(functionId)}">${csrfField(page)}<input type="hidden" name="buildId" value="${keep}">
<label for="canary-build">Canary build</label><select id="canary-build" name="canaryBuildId">${canaryChoices.map((id) => html`<option value="${id}"${r.canary?.buildId === id ? html` selected` : ""}>${id}</option>`)}</select>
<label for="canary-weight">Share of new tasks <span class="hint">(percent, 1–99)</span></label><input id="canary-weight" name="canaryWeight" type="number" min="1" max="99" step="1" value="${r.canary?.weight ?? 10}" required>
<p><button type="submit">Start canary</button></p></form>` : ""}
<p class="hint">Tasks already issued keep the build they were issued with.</p>
</section>`;
}

export function registerRelease(app: ConsoleApp) {
  app.post("/functions/:id/release", async (c) => {
    const id = c.req.param("id");
    const form = await formOf(c);
    const canaryBuildId = form.get("canaryBuildId");
    const weight = form.get("canaryWeight");
    const json = {
      buildId: form.get("buildId") || null,
      ...(canaryBuildId ? { canary: { buildId: canaryBuildId, weight: weight.trim() === "" ? undefined : Number(weight) } } : {}),
    };
    const r = await c.var.api.call("PUT", `/v1/function/${id}/release`, { json });
    if (r.ok) return seeOther(c, `/console/functions/${id}`, json.buildId ? `Build ${json.buildId} released.` : "Release saved: the newest build runs.");
    return refused(c, id, r.error, r.status);
  });

  app.post("/functions/:id/rollback", async (c) => {
    const id = c.req.param("id");
    const r = await c.var.api.call<Release>("POST", `/v1/function/${id}/rollback`);
    if (r.ok) return seeOther(c, `/console/functions/${id}`, `Rolled back: build ${r.data.buildId} is pinned.`);
    return refused(c, id, r.error, r.status);
  });
}

/** The API's refusal on a page of its own, with the way back: the release is as it was. */
function refused(c: ConsoleContext, functionId: string, error: ApiError, status: number) {
  const body = html`<p><a href="/console/functions/${functionId}">← Function</a></p><h1>Release not changed</h1>${errorBox(error)}`;
  return c.html(layout("Release not changed", { ...c.var.page, section: "functions" }, body), status as 400);
}
