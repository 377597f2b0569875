import { describe, expect, it } from "vitest";
import { call, callJson, expectError, newAccount, sql } from "./helpers.js";

const PAID_AT = Date.UTC(2026, 10, 21, 5, 14);

async function seedInvoice(accountId: string, id: string, o: { period: string; paid?: boolean; amount?: number }) {
  await sql(
    `insert into invoices (id, account_id, amount, currency, description, status, period, paid_at, card_brand, card_last4, receipt_url, created_at)
     values (?, ?, ?, 'usd', 'DEVELOPER (100000 invocations)', ?, ?, ?, ?, ?, ?, ?)`,
    id,
    accountId,
    o.amount ?? 29.99,
    o.paid ? "succeeded" : "open",
    o.period,
    o.paid ? PAID_AT : null,
    o.paid ? "visa" : null,
    o.paid ? "4242" : null,
    o.paid ? `https://pay.example/receipts/${id}` : null,
    PAID_AT - 3_600_000,
  );
}

describe("GET /v1/invoice/<invoice_id>", () => {
  it("answers {id, amount, description, status, paidDay as an integer, payment}", async () => {
    const { token, accountId } = await newAccount();
    await seedInvoice(accountId, `inv${accountId}a`, { period: "2026-11", paid: true });
    expect(await callJson(`/v1/invoice/inv${accountId}a`, 200, { token })).toEqual({
      id: `inv${accountId}a`,
      amount: 29.99,
      description: "DEVELOPER (100000 invocations)",
      status: "succeeded",
      paidDay: PAID_AT / 1000,
      payment: { card: { brand: "visa", last4: "4242" }, receiptUrl: `https://pay.example/receipts/inv${accountId}a` },
    });
  });

  it("answers paidDay null and no payment for an open invoice", async () => {
    const { token, accountId } = await newAccount();
    await seedInvoice(accountId, `inv${accountId}b`, { period: "2026-12" });
    expect(await callJson(`/v1/invoice/inv${accountId}b`, 200, { token })).toMatchObject({ status: "open", paidDay: null, payment: null });
  });

  it("answers 404 for an unknown id", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/invoice/nosuchinvoice", { token }), 404, "not_found");
  });
});

describe("GET /v1/invoice/list", () => {
  it("answers [{id, amount, status, paidDay as a string}], newest first", async () => {
    const { token, accountId } = await newAccount();
    expect(await callJson("/v1/invoice/list", 200, { token })).toEqual([]);
    await seedInvoice(accountId, `inv${accountId}1`, { period: "2026-10", paid: true, amount: 10 });
    await seedInvoice(accountId, `inv${accountId}2`, { period: "2026-11" });
    expect(await callJson("/v1/invoice/list", 200, { token })).toEqual([
      { id: `inv${accountId}2`, amount: 29.99, status: "open", paidDay: null },
      { id: `inv${accountId}1`, amount: 10, status: "succeeded", paidDay: String(PAID_AT / 1000) },
    ]);
  });
});
