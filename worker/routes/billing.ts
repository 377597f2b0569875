import { Hono } from "hono";
import type { AppEnv } from "../env.js";
import { parseJsonText, readTextLimited } from "../http/validate.js";
import { MAX_WEBHOOK_BYTES } from "../http/body-limits.js";
import { applyEvent, verifySignature, webhookSecret } from "../billing/webhook.js";
import { plansFrom } from "../billing/plans.js";
import { currentUsage } from "../task-life/held-reads.js";
import { describeRoute } from "../openapi/describe.js";

/** The payment provider's webhook: authenticated by its signature, not by a token. */
export const billingWebhookRoutes = new Hono<AppEnv>().post("/webhook", describeRoute({
  summary: "Payment provider webhook (Stripe-style signature)",
  group: "invoices", auth: "none",
  body: { contentType: "application/json", required: true, description: "An invoice.payment_succeeded or invoice.payment_failed event." },
  ok: { status: 200, description: "{received: true, duplicate}", contentType: "application/json" },
  errors: [400, 404, 500],
}), async (c) => {
  const secret = webhookSecret(c.env.BILLING_WEBHOOK_SECRET);
  const raw = await readTextLimited(c.req.raw, MAX_WEBHOOK_BYTES);
  const now = Date.now();
  await verifySignature(secret, c.req.header("stripe-signature"), raw, now);
  const { duplicate } = await applyEvent(c.var.db, parseJsonText(raw), now);
  return c.json({ received: true, duplicate });
});

/** The caller's usage in the current period, against its plan. */
export const usageRoutes = new Hono<AppEnv>().get("/", describeRoute({
  summary: "This period's usage against the plan",
  group: "invoices", auth: "account",
  ok: { status: 200, description: "{period, plan, invocations, pending, remaining, durationMs, gbSeconds}", contentType: "application/json" },
  errors: [401],
}), async (c) => c.json(await currentUsage(c.env, c.var.db, plansFrom(c.env.PLANS), c.var.caller.accountId)));
