import { and, eq, inArray, sql } from "drizzle-orm";
import { z } from "zod";
import type { Db } from "../db/client.js";
import { invoices, webhookEvents } from "../db/schema.js";
import { ApiError, notFound } from "../errors.js";
import { parseWith } from "../http/validate.js";

/** Signatures older or newer than this are refused: a captured request cannot be replayed later. */
export const SIGNATURE_TOLERANCE_S = 300;

const badSignature = (why: string) => new ApiError("invalid_signature", `webhook signature refused: ${why}`);

async function hmacHex(secret: string, message: string): Promise<string> {
  const key = await crypto.subtle.importKey("raw", new TextEncoder().encode(secret), { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  const mac = await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(message));
  return [...new Uint8Array(mac)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

function timingSafeEqualHex(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * The shared secret. Without one no delivery can be verified: the caller (anyone on the internet)
 * learns only that, and the operator's log names the missing setting.
 */
export function webhookSecret(secret: string | undefined): string {
  if (secret) return secret;
  console.error(JSON.stringify({ level: "error", message: "BILLING_WEBHOOK_SECRET is not configured: webhook deliveries are refused" }));
  throw new ApiError("internal_error", "the webhook cannot accept deliveries right now; it has been logged");
}

/** Stripe's scheme: header `t=<unix>,v1=<hex>[,v1=…]`, HMAC-SHA256 over `<t>.<raw body>`. */
export async function verifySignature(secret: string, header: string | undefined, rawBody: string, nowMs: number): Promise<void> {
  if (!header) throw badSignature("no Stripe-Signature header");
  const parts = header.split(",").map((p) => p.trim().split("=", 2) as [string, string?]);
  const t = parts.find(([k]) => k === "t")?.[1];
  const v1 = parts.filter(([k, v]) => k === "v1" && v).map(([, v]) => v!);
  if (!t || !/^\d+$/.test(t) || !v1.length) throw badSignature("malformed header");
  if (Math.abs(nowMs / 1000 - Number(t)) > SIGNATURE_TOLERANCE_S) throw badSignature("timestamp outside the tolerance");
  const expected = await hmacHex(secret, `${t}.${rawBody}`);
  if (!v1.some((sig) => timingSafeEqualHex(sig, expected))) throw badSignature("no matching signature");
}

export const webhookEvent = z.object({
  id: z.string().min(1).max(255),
  type: z.enum(["invoice.payment_succeeded", "invoice.payment_failed"]),
  data: z.object({
    object: z.object({
      invoice: z.string().min(1).max(64),
      paidAt: z.int().positive().optional(),
      card: z.object({ brand: z.string().max(32), last4: z.string().regex(/^\d{4}$/) }).optional(),
      receiptUrl: z.url().max(2048).optional(),
    }),
  }),
});
export type WebhookEvent = z.infer<typeof webhookEvent>;

/**
 * Applies one verified event. The event id is recorded in the same batch as the invoice update,
 * and the update only applies when this delivery recorded it: a redelivered event changes nothing.
 */
export async function applyEvent(db: Db, raw: unknown, now: number): Promise<{ duplicate: boolean }> {
  const event = parseWith(webhookEvent, raw);
  const obj = event.data.object;
  const [invoice] = await db.select({ id: invoices.id }).from(invoices).where(eq(invoices.id, obj.invoice));
  if (!invoice) throw notFound("invoice");
  const succeeded = event.type === "invoice.payment_succeeded";
  if (succeeded && (!obj.card || !obj.receiptUrl)) throw new ApiError("validation_failed", "a payment_succeeded event needs data.object.card and receiptUrl");
  const set = succeeded
    ? { status: "succeeded" as const, paidAt: (obj.paidAt ?? Math.floor(now / 1000)) * 1000, cardBrand: obj.card!.brand, cardLast4: obj.card!.last4, receiptUrl: obj.receiptUrl! }
    : { status: "failed" as const };
  const [inserted] = await db.batch([
    db.insert(webhookEvents).values({ id: event.id, type: event.type, receivedAt: now }).onConflictDoNothing().returning({ id: webhookEvents.id }),
    db
      .update(invoices)
      .set(set)
      .where(
        and(
          eq(invoices.id, obj.invoice),
          // A paid invoice stays paid; a failed one can still be paid by a later attempt.
          inArray(invoices.status, succeeded ? ["open", "failed"] : ["open"]),
          sql`(select ${webhookEvents.receivedAt} from ${webhookEvents} where ${webhookEvents.id} = ${event.id}) = ${now}`,
        ),
      ),
  ]);
  return { duplicate: inserted.length === 0 };
}
