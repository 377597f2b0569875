import { html } from "hono/html";
import type { ConsoleApp, ConsoleContext } from "../context.js";
import { formOf, seeOther } from "../context.js";
import { csrfField, errorBox, type Html } from "../layout.js";
import type { ApiError } from "../api.js";

/** Shows the function page again with a box's refusal. */
export type Rerender = (c: ConsoleContext, id: string, problem: ApiError, status: number) => Promise<Response>;

/**
 * The function page's configuration section: its environment variables (names and values) and its
 * secrets (names only: the API never shows a value again). Every change goes through the API, so
 * its rules and messages are the console's.
 */
export async function configSection(c: ConsoleContext, id: string, problem: ApiError | undefined): Promise<Html> {
  const [vars, secrets] = await Promise.all([
    c.var.api.get<Record<string, string>>(`/v1/function/${id}/env`),
    c.var.api.get<{ name: string; updatedAt: string }[]>(`/v1/function/${id}/secrets`),
  ]);
  const csrf = csrfField(c.var.page);
  const remove = (what: "env" | "secrets", name: string) =>
    html`<form method="post" action="/console/functions/${id}/${what}/delete" style="display:inline">${csrf}<input type="hidden" name="name" value="${name}"><button type="submit" class="secondary" aria-label="Remove ${name}">Remove</button></form>`;
  return html`<section class="card" aria-labelledby="config-h"><h2 id="config-h">Configuration</h2>
<p class="hint">Environment variables and secrets reach the function as process environment variables, from its next call.</p>
${errorBox(problem)}
<h3 style="font-size:1rem">Environment variables</h3>
${Object.keys(vars).length
    ? html`<div class="scroll"><table><thead><tr><th scope="col">Name</th><th scope="col">Value</th><th scope="col"></th></tr></thead>
<tbody>${Object.entries(vars).map(([name, value]) => html`<tr><td><code>${name}</code></td><td><code>${value}</code></td><td>${remove("env", name)}</td></tr>`)}</tbody></table></div>`
    : html`<p class="hint">None.</p>`}
<form method="post" action="/console/functions/${id}/env">${csrf}
<label for="env-name">Name</label><input id="env-name" name="name" type="text" required pattern="[A-Za-z_][A-Za-z0-9_]{0,127}">
<label for="env-value">Value</label><textarea id="env-value" name="value" rows="2"></textarea>
<p><button type="submit">Set variable</button></p></form>
<h3 style="font-size:1rem">Secrets</h3>
${secrets.length
    ? html`<div class="scroll"><table><thead><tr><th scope="col">Name</th><th scope="col">Updated</th><th scope="col"></th></tr></thead>
<tbody>${secrets.map((s) => html`<tr><td><code>${s.name}</code></td><td>${s.updatedAt}</td><td>${remove("secrets", s.name)}</td></tr>`)}</tbody></table></div>`
    : html`<p class="hint">None.</p>`}
<form method="post" action="/console/functions/${id}/secrets" autocomplete="off">${csrf}
<label for="sec-name">Name</label><input id="sec-name" name="name" type="text" required pattern="[A-Za-z_][A-Za-z0-9_]{0,127}">
<label for="sec-value">Value <span class="hint">(never shown again; setting an existing name replaces it)</span></label><input id="sec-value" name="value" type="password" required autocomplete="new-password">
<p><button type="submit">Set secret</button></p></form>
</section>`;
}

/** The section's forms; a refusal shows the function page again with the API's message. */
export function registerFunctionConfig(app: ConsoleApp, rerender: Rerender) {
  const done = async (c: ConsoleContext, id: string, r: { ok: true } | { ok: false; status: number; error: ApiError }, message: string) =>
    r.ok ? seeOther(c, `/console/functions/${id}`, message) : rerender(c, id, r.error, r.status);
  const putEnv = async (c: ConsoleContext, id: string, change: (vars: Record<string, string>) => void) => {
    const vars = await c.var.api.get<Record<string, string>>(`/v1/function/${id}/env`);
    change(vars);
    return c.var.api.call("PUT", `/v1/function/${id}/env`, { json: vars });
  };

  app.post("/functions/:id/env", async (c) => {
    const id = c.req.param("id");
    const form = await formOf(c);
    return done(c, id, await putEnv(c, id, (vars) => (vars[form.get("name")] = form.get("value"))), "Variable set.");
  });
  app.post("/functions/:id/env/delete", async (c) => {
    const id = c.req.param("id");
    const form = await formOf(c);
    return done(c, id, await putEnv(c, id, (vars) => delete vars[form.get("name")]), "Variable removed.");
  });
  app.post("/functions/:id/secrets", async (c) => {
    const id = c.req.param("id");
    const form = await formOf(c);
    const r = await c.var.api.call("PUT", `/v1/function/${id}/secrets/${encodeURIComponent(form.get("name"))}`, { json: { value: form.get("value") } });
    return done(c, id, r, "Secret set.");
  });
  app.post("/functions/:id/secrets/delete", async (c) => {
    const id = c.req.param("id");
    const form = await formOf(c);
    return done(c, id, await c.var.api.call("DELETE", `/v1/function/${id}/secrets/${encodeURIComponent(form.get("name"))}`), "Secret deleted.");
  });
}
