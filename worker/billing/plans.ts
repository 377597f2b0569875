import { z } from "zod";
import { ApiError } from "../errors.js";

/**
 * Plans are configuration: the PLANS variable (wrangler.toml [vars], or a secret per environment)
 * holds a JSON array. Each is sold as a bundle of invocations per calendar month.
 */
export const planSchema = z.object({
  id: z.string().regex(/^[A-Z0-9_]{1,32}$/),
  description: z.string().min(1).max(200),
  price: z.number().min(0),
  currency: z.string().regex(/^[a-z]{3}$/),
  invocations: z.int().min(0),
});
export type Plan = z.infer<typeof planSchema>;
const plansSchema = z.array(planSchema).min(1);

let cache: { raw: string; plans: Plan[] } | undefined;

/** Parses PLANS once per isolate; a malformed value fails loudly rather than billing wrongly. */
export function plansFrom(raw: string | undefined): Plan[] {
  if (!raw) throw new ApiError("internal_error", "PLANS is not configured");
  if (cache?.raw === raw) return cache.plans;
  const parsed = plansSchema.safeParse(JSON.parse(raw));
  if (!parsed.success) throw new ApiError("internal_error", `PLANS is malformed: ${parsed.error.issues[0]?.message}`);
  cache = { raw, plans: parsed.data };
  return parsed.data;
}

export function planOf(plans: Plan[], id: string): Plan {
  return plans.find((p) => p.id === id) ?? plans[0]!;
}

/** The billing period of an instant: its calendar month in UTC, e.g. "2026-11". */
export const periodOf = (ms: number) => new Date(ms).toISOString().slice(0, 7);

/** The period after `period`. */
export function nextPeriod(period: string): string {
  const [y, m] = period.split("-").map(Number) as [number, number];
  return m === 12 ? `${y + 1}-01` : `${y}-${String(m + 1).padStart(2, "0")}`;
}
