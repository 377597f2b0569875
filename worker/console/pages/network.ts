import { html } from "hono/html";
import type { ConsoleApp, ConsoleContext } from "../context.js";
import { formOf, seeOther } from "../context.js";
import { csrfField, errorBox, type Html } from "../layout.js";
import type { ApiError } from "../api.js";
import type { Rerender } from "./function-config.js";
import { egressGranted } from "../queries.js";
import type { Network } from "../../../shared/schemas/network.js";

/**
 * The function page's Network box: what the function may reach, and the switch between no network
 * and public addresses. Without the operator's grant it says so and offers nothing it would refuse
 * (but keeps "none" for a function the grant was taken from: it is always allowed).
 */
export async function networkSection(c: ConsoleContext, id: string, problem: ApiError | undefined): Promise<Html> {
  const [{ egress }, granted] = await Promise.all([c.var.api.get<Network>(`/v1/function/${id}/network`), egressGranted(c.var.db, c.var.accountId)]);
  const internet = egress === "internet";
  const state = internet
    ? html`<p id="egress-state"><strong>Internet</strong>: the function reaches public addresses only. Private networks, loopback, link-local addresses (cloud metadata), the node itself and other functions stay unreachable. Its tasks run only on nodes that allow egress.</p>`
    : html`<p id="egress-state"><strong>No network</strong>: the function sees only loopback (the default).</p>`;
  const offer = internet
    ? html`<form method="post" action="/console/functions/${id}/network">${csrfField(c.var.page)}<input type="hidden" name="egress" value="none"><button type="submit" class="secondary">Turn network off</button></form>`
    : granted
      ? html`<form method="post" action="/console/functions/${id}/network">${csrfField(c.var.page)}<input type="hidden" name="egress" value="internet"><button type="submit">Allow internet access</button></form>`
      : html`<p id="egress-not-granted" class="hint">This account has no grant for network egress: the operator must grant it before a function can reach the internet. Ask them to run <code>gcfaas accounts grant &lt;account-id&gt; --egress true</code>.</p>`;
  return html`<section class="card" aria-labelledby="network-h"><h2 id="network-h">Network</h2>
${errorBox(problem)}
${state}
${offer}
<p class="hint">A change applies to tasks issued after it.</p>
</section>`;
}

/** The box's form; a refusal (403 egress_not_allowed) shows the function page again with the API's message. */
export function registerNetwork(app: ConsoleApp, rerender: Rerender) {
  app.post("/functions/:id/network", async (c) => {
    const id = c.req.param("id");
    const egress = (await formOf(c)).get("egress");
    const r = await c.var.api.call("PUT", `/v1/function/${id}/network`, { json: { egress } });
    if (!r.ok) return rerender(c, id, r.error, r.status);
    return seeOther(c, `/console/functions/${id}`, egress === "internet" ? "Internet access allowed." : "Network turned off.");
  });
}
