import { html } from "hono/html";
import type { ConsoleApp, ConsoleContext } from "../context.js";
import { formOf, seeOther } from "../context.js";
import { csrfField, errorBox, type Html } from "../layout.js";
import type { ApiError } from "../api.js";
import type { RetryPolicy } from "../../../shared/schemas/retry.js";

type Rerender = (c: ConsoleContext, id: string, problem: ApiError, status: number) => Promise<Response>;

/** A form's integer field as the API should judge it: a number when it looks like one, else the text (so the API names the field). */
const numberOr = (v: string): number | string => (/^-?\d+(\.\d+)?$/.test(v.trim()) ? Number(v) : v);

/**
 * The function page's boxes for its retry policy (attempts, backoff, dead-letter function among
 * the account's functions) and its concurrency cap. Each form PUTs through the API, whose rules and
 * messages are the console's.
 */
export async function retrySection(c: ConsoleContext, id: string, problem: ApiError | undefined): Promise<Html> {
  const [retry, cap, fns] = await Promise.all([
    c.var.api.get<RetryPolicy>(`/v1/function/${id}/retry`),
    c.var.api.get<{ max: number | null }>(`/v1/function/${id}/concurrency`),
    c.var.api.get<{ id: string; name: string }[]>("/v1/function/list"),
  ]);
  const csrf = csrfField(c.var.page);
  return html`<section class="card" aria-labelledby="retry-h"><h2 id="retry-h">Retries and concurrency</h2>
${errorBox(problem)}
<form method="post" action="/console/functions/${id}/retry">${csrf}
<p class="hint">Asynchronous tasks that answer a 5xx or time out run again after the backoff, doubling each time (±20 %, at most an hour). Calls that wait for their answer are never retried.</p>
<label for="retry-attempts">Attempts in all <span class="hint">(1–5; 1: no retry)</span></label><input id="retry-attempts" name="maxAttempts" type="number" min="1" max="5" step="1" value="${retry.maxAttempts}" required>
<label for="retry-backoff">First backoff <span class="hint">(seconds, 1–3600)</span></label><input id="retry-backoff" name="backoffSeconds" type="number" min="1" max="3600" step="1" value="${retry.backoffSeconds}" required>
<label for="retry-dl">Dead-letter function <span class="hint">(gets one task when attempts run out)</span></label><select id="retry-dl" name="deadLetterFunctionId"><option value="">none</option>${fns.map((f) => html`<option value="${f.id}"${retry.deadLetterFunctionId === f.id ? html` selected` : ""}>${f.name} (${f.id})</option>`)}</select>
<p><button type="submit">Save retries</button></p></form>
<form method="post" action="/console/functions/${id}/concurrency">${csrf}
<label for="concurrency-max">At most this many tasks at once <span class="hint">(1–1000; empty: no cap; the rest wait in order)</span></label><input id="concurrency-max" name="max" type="number" min="1" max="1000" step="1" value="${cap.max ?? ""}">
<p><button type="submit">Save concurrency</button></p></form>
</section>`;
}

export function registerRetries(app: ConsoleApp, rerender: Rerender) {
  const done = (c: ConsoleContext, id: string, r: { ok: true } | { ok: false; status: number; error: ApiError }, message: string) =>
    r.ok ? seeOther(c, `/console/functions/${id}`, message) : rerender(c, id, r.error, r.status);

  app.post("/functions/:id/retry", async (c) => {
    const id = c.req.param("id");
    const form = await formOf(c);
    const json = { maxAttempts: numberOr(form.get("maxAttempts")), backoffSeconds: numberOr(form.get("backoffSeconds")), deadLetterFunctionId: form.get("deadLetterFunctionId") || null };
    return done(c, id, await c.var.api.call("PUT", `/v1/function/${id}/retry`, { json }), "Retries saved.");
  });

  app.post("/functions/:id/concurrency", async (c) => {
    const id = c.req.param("id");
    const max = (await formOf(c)).get("max").trim();
    return done(c, id, await c.var.api.call("PUT", `/v1/function/${id}/concurrency`, { json: { max: max === "" ? null : numberOr(max) } }), "Concurrency saved.");
  });
}
