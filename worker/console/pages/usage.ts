import { html } from "hono/html";
import type { ConsoleApp } from "../context.js";
import { layout } from "../layout.js";
import { barChart } from "../charts.js";
import { dailyTasks } from "../queries.js";

interface Usage {
  period: string;
  plan: { id: string; description: string; price: number; currency: string; invocations: number };
  invocations: number;
  pending?: number;
  remaining: number;
  durationMs: number;
  gbSeconds: number;
}
interface InvoiceItem {
  id: string;
  amount: number;
  status: string;
  paidDay: string | null;
}
interface InvoiceDetail {
  amount: number;
  description: string;
  status: string;
  paidDay: number | null;
  payment: { card: { brand: string; last4: string }; receiptUrl: string } | null;
}

/** Receipts come from the payment provider; only http(s) links are shown as links. */
const safeUrl = (u: string | undefined) => (u && /^https?:\/\//i.test(u) ? u : undefined);

export function registerUsage(app: ConsoleApp) {
  app.get("/usage", async (c) => {
    const [usage, invoices, daily] = await Promise.all([
      c.var.api.get<Usage>("/v1/usage"),
      c.var.api.get<InvoiceItem[]>("/v1/invoice/list"),
      dailyTasks(c.env, c.var.db, c.var.accountId, 30),
    ]);
    const details = await Promise.all(invoices.map((i) => c.var.api.get<InvoiceDetail>(`/v1/invoice/${i.id}`)));
    const used = usage.invocations + (usage.pending ?? 0);
    const body = html`<h1>Usage and invoices</h1>
<section class="card" aria-labelledby="plan-h"><h2 id="plan-h">This period (${usage.period})</h2>
<p>Plan <strong>${usage.plan.description}</strong>: <span id="invocations">${usage.invocations}</span> of ${usage.plan.invocations} invocations used${usage.pending ? html`, ${usage.pending} pending` : ""}; ${usage.remaining} left.</p>
<progress value="${Math.min(used, usage.plan.invocations)}" max="${Math.max(1, usage.plan.invocations)}" aria-label="Invocations used this period"></progress>
<p class="hint">${Math.round(usage.durationMs / 1000)} s of run time, ${usage.gbSeconds} GB-seconds.</p></section>
<section class="card" aria-labelledby="chart-h"><h2 id="chart-h">Tasks over the last 30 days</h2>${barChart(daily.total, `Tasks per day over the last 30 days: ${daily.total.map((d) => d.count).join(", ")}`)}</section>
<section class="card" aria-labelledby="inv-h"><h2 id="inv-h">Invoices</h2>
${invoices.length ? html`<div class="scroll"><table><thead><tr><th scope="col">Invoice</th><th scope="col">Plan</th><th scope="col">Amount</th><th scope="col">Status</th><th scope="col">Paid</th><th scope="col">Receipt</th></tr></thead>
<tbody>${invoices.map((inv, i) => {
      const d = details[i]!;
      const receipt = safeUrl(d.payment?.receiptUrl);
      return html`<tr><td>${inv.id}</td><td>${d.description}</td><td>${inv.amount.toFixed(2)} ${usage.plan.currency.toUpperCase()}</td><td>${inv.status}</td>
<td>${d.paidDay ? new Date(d.paidDay * 1000).toISOString().slice(0, 10) : "—"}</td><td>${receipt ? html`<a href="${receipt}" rel="noopener noreferrer">receipt</a>${d.payment ? html` (${d.payment.card.brand} ····${d.payment.card.last4})` : ""}` : "—"}</td></tr>`;
    })}</tbody></table></div>` : html`<p class="hint">No invoices yet.</p>`}</section>`;
    return c.html(layout("Usage", { ...c.var.page, section: "usage" }, body));
  });
}
