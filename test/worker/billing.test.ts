import { createExecutionContext, createScheduledController, env, waitOnExecutionContext } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import worker from "../../worker/index.js";
import { createApp } from "../../worker/app.js";
import { ADMIN, call, callJson, clearQueue, deployedFunction, expectError, newAccount, newEndpoint, flushedDb, onRowlessTasks } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

async function runTasks(agent: FakeAgent, token: string, fn: string, n: number, durationMs: number) {
  for (let i = 0; i < n; i++) {
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, method: "POST" });
    await agent.next("task.assign");
    agent.done(id, "ok", 200, { durationMs });
    await call(`/v1/task/${id}/result?wait=5`, { token });
  }
}

describe("GET /v1/usage", () => {
  it("adds up invocations, duration and memory from finished tasks", async () => {
    const agent = await FakeAgent.connect("meter");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    await callJson(`/v1/function/${fn}/capabilities`, 204, { token, json: { memSize: 512 } });
    await runTasks(agent, token, fn, 3, 1000);
    const usage = await callJson("/v1/usage", 200, { token });
    expect(usage).toEqual({
      period: new Date().toISOString().slice(0, 7),
      plan: { id: "DEVELOPER", description: "DEVELOPER (100000 invocations)", price: 10, currency: "usd", invocations: 100000 },
      invocations: 3,
      pending: 0,
      remaining: 99997,
      durationMs: 3000,
      gbSeconds: 1.5, // 3 × 1 s × 0.5 GiB
    });
    await agent.close();
  });

  it("meters a task once even when its result is reported twice", async () => {
    const agent = await FakeAgent.connect("twice");
    const { token } = await newAccount();
    const fn = await deployedFunction(token);
    const { id } = await callJson(`/v1/task/${fn}`, 201, { token, method: "POST" });
    await agent.next("task.assign");
    agent.done(id, "a");
    agent.done(id, "b");
    await call(`/v1/task/${id}/result?wait=5`, { token });
    expect((await callJson("/v1/usage", 200, { token })).invocations).toBe(1);
    await agent.close();
  });
});

describe("quota", () => {
  it("refuses new tasks and public calls with 402 once the plan's invocations are used up", async () => {
    const agent = await FakeAgent.connect("quota");
    const acct = await newAccount();
    await callJson(`/v1/admin/accounts/${acct.accountId}`, 204, { token: ADMIN, method: "PATCH", json: { plan: "TINY" } });
    const fn = await deployedFunction(acct.token);
    const ep = await newEndpoint(acct.token, fn, { dailyLimit: 10 });
    await runTasks(agent, acct.token, fn, 2, 10);
    const err = await expectError(call(`/v1/task/${fn}`, { token: acct.token, method: "POST" }), 402, "quota_exhausted");
    expect(err.message).toContain("TINY (2 invocations)");
    await expectError(call(`/gc/${ep}`, { method: "POST" }), 402, "quota_exhausted");
    expect((await callJson(`/v1/endpoint/${ep}/metrics`, 200, { token: acct.token })).todayTasks).toBe(0);
    expect((await callJson("/v1/usage", 200, { token: acct.token })).remaining).toBe(0);
    await agent.close();
  });

  it("refuses an unknown plan", async () => {
    const acct = await newAccount();
    await expectError(call(`/v1/admin/accounts/${acct.accountId}`, { token: ADMIN, method: "PATCH", json: { plan: "GOLD" } }), 400, "validation_failed");
  });
});

async function renew(scheduledTime: number) {
  const ctx = createExecutionContext();
  await worker.scheduled!(createScheduledController({ scheduledTime, cron: "5 0 1 * *" }) as ScheduledController, env, ctx);
  await waitOnExecutionContext(ctx);
}

describe("monthly renewal (Cron Trigger)", () => {
  it("renews every account's plan into one open invoice for the new period", async () => {
    const a = await newAccount("a");
    const b = await newAccount("b");
    await callJson(`/v1/admin/accounts/${b.accountId}`, 204, { token: ADMIN, method: "PATCH", json: { plan: "TINY" } });
    const when = Date.parse("2026-12-01T00:05:00Z");
    await renew(when);
    await renew(when); // a retried run adds nothing
    const [listA, listB] = [await callJson("/v1/invoice/list", 200, { token: a.token }), await callJson("/v1/invoice/list", 200, { token: b.token })];
    expect(listA).toEqual([{ id: expect.any(String), amount: 10, status: "open", paidDay: null }]);
    expect(listB).toEqual([{ id: expect.any(String), amount: 1.5, status: "open", paidDay: null }]);
    expect(await callJson(`/v1/invoice/${listB[0].id}`, 200, { token: b.token })).toEqual({
      id: listB[0].id, amount: 1.5, description: "TINY (2 invocations)", status: "open", paidDay: null, payment: null,
    });
    await expectError(call(`/v1/invoice/${listB[0].id}`, { token: a.token }), 404, "not_found");
    const period = await (await flushedDb()).prepare("select period from invoices where id = ?").bind(listA[0].id).first<{ period: string }>();
    expect(period?.period).toBe("2026-12");
  });
});

async function sign(body: string, t = Math.floor(Date.now() / 1000), secret = "whsec_test") {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(`${t}.${body}`)));
  return `t=${t},v1=${[...mac].map((x) => x.toString(16).padStart(2, "0")).join("")}`;
}

const webhook = async (body: string, signature: string) =>
  call("/v1/billing/webhook", { method: "POST", body, headers: { "content-type": "application/json", "stripe-signature": signature } });

async function openInvoice() {
  const acct = await newAccount();
  await renew(Date.now());
  const [inv] = await callJson("/v1/invoice/list", 200, { token: acct.token });
  return { ...acct, invoice: inv.id as string };
}

const paid = (invoice: string, id = `evt_${crypto.randomUUID()}`) =>
  JSON.stringify({
    id,
    type: "invoice.payment_succeeded",
    data: { object: { invoice, paidAt: 1795000000, card: { brand: "visa", last4: "4242" }, receiptUrl: "https://pay.example/receipts/1" } },
  });

describe("POST /v1/billing/webhook", () => {
  it("marks an invoice paid on a correctly signed event", async () => {
    const { token, invoice } = await openInvoice();
    const body = paid(invoice);
    expect(await callJson("/v1/billing/webhook", 200, { method: "POST", body, headers: { "content-type": "application/json", "stripe-signature": await sign(body) } })).toEqual({ received: true, duplicate: false });
    expect(await callJson(`/v1/invoice/${invoice}`, 200, { token })).toMatchObject({
      status: "succeeded",
      paidDay: 1795000000,
      payment: { card: { brand: "visa", last4: "4242" }, receiptUrl: "https://pay.example/receipts/1" },
    });
    expect((await callJson("/v1/invoice/list", 200, { token }))[0]).toMatchObject({ status: "succeeded", paidDay: "1795000000" });
  });

  it("marks an invoice failed", async () => {
    const { token, invoice } = await openInvoice();
    const body = JSON.stringify({ id: "evt_failed_1", type: "invoice.payment_failed", data: { object: { invoice } } });
    expect((await webhook(body, await sign(body))).status).toBe(200);
    expect((await callJson(`/v1/invoice/${invoice}`, 200, { token })).status).toBe("failed");
  });

  it("refuses a bad signature and changes nothing", async () => {
    const { token, invoice } = await openInvoice();
    const body = paid(invoice);
    await expectError(webhook(body, await sign(body, undefined, "whsec_wrong")), 400, "invalid_signature");
    await expectError(webhook(body, "t=1,v1=zz"), 400, "invalid_signature");
    await expectError(webhook(body, ""), 400, "invalid_signature");
    await expectError(webhook(paid(invoice), await sign(body)), 400, "invalid_signature"); // signed another body
    expect((await callJson(`/v1/invoice/${invoice}`, 200, { token })).status).toBe("open");
  });

  it("refuses a stale timestamp", async () => {
    const { token, invoice } = await openInvoice();
    const body = paid(invoice);
    await expectError(webhook(body, await sign(body, Math.floor(Date.now() / 1000) - 301)), 400, "invalid_signature");
    expect((await callJson(`/v1/invoice/${invoice}`, 200, { token })).status).toBe("open");
  });

  it("changes nothing when the same event is delivered again", async () => {
    const { token, invoice } = await openInvoice();
    const body = paid(invoice, "evt_once");
    await webhook(body, await sign(body));
    const failedWithSameId = JSON.stringify({ id: "evt_once", type: "invoice.payment_failed", data: { object: { invoice } } });
    expect(await (await webhook(failedWithSameId, await sign(failedWithSameId))).json()).toEqual({ received: true, duplicate: true });
    expect(await (await webhook(body, await sign(body))).json()).toEqual({ received: true, duplicate: true });
    expect((await callJson(`/v1/invoice/${invoice}`, 200, { token })).status).toBe("succeeded");
  });

  it("answers 500 without naming its configuration when no secret is set", async () => {
    const body = paid("nosuchinvoice");
    const unconfigured = { ...env, BILLING_WEBHOOK_SECRET: undefined };
    const req = new Request("https://api.test/v1/billing/webhook", { method: "POST", body, headers: { "content-type": "application/json", "stripe-signature": await sign(body) } });
    const err = await expectError(createApp().fetch(req, unconfigured, createExecutionContext()), 500, "internal_error");
    expect(err.message).not.toMatch(/BILLING|WEBHOOK_SECRET|secret|configur/i);
  });

  it("answers 404 for an unknown invoice and 400 for a malformed event", async () => {
    const unknown = paid("nosuchinvoice");
    await expectError(webhook(unknown, await sign(unknown)), 404, "not_found");
    const junk = JSON.stringify({ id: "evt_x", type: "invoice.created" });
    await expectError(webhook(junk, await sign(junk)), 400, "validation_failed");
  });
});
