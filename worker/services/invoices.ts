import { and, desc, eq } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { invoices } from "../db/schema.js";
import { notFound } from "../errors.js";
import { unixSeconds } from "../lib/time.js";

type InvoiceRow = typeof invoices.$inferSelect;

const payment = (i: InvoiceRow) =>
  i.cardBrand || i.cardLast4 || i.receiptUrl
    ? { card: { brand: i.cardBrand ?? "", last4: i.cardLast4 ?? "" }, receiptUrl: i.receiptUrl ?? "" }
    : null;

/** `paidDay` is an integer here and a string in the list, as the specification shows. */
export async function describeInvoice(db: Db, accountId: string, id: string) {
  const [i] = await db.select().from(invoices).where(and(eq(invoices.id, id), eq(invoices.accountId, accountId)));
  if (!i) throw notFound("invoice");
  return {
    id: i.id,
    amount: i.amount,
    description: i.description,
    status: i.status,
    paidDay: i.paidAt == null ? null : Math.floor(i.paidAt / 1000),
    payment: payment(i),
  };
}

export async function listInvoices(db: Db, accountId: string) {
  const rows = await db.select().from(invoices).where(eq(invoices.accountId, accountId)).orderBy(desc(invoices.id));
  return rows.map((i) => ({ id: i.id, amount: i.amount, status: i.status, paidDay: unixSeconds(i.paidAt) }));
}
