import { asc, gt } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client.js";
import { accounts, invoices } from "../db/schema.js";
import { newId } from "../lib/ids.js";
import { periodOf, planOf, type Plan } from "./plans.js";

const PAGE = 500;
/** 9 columns a row, 100 parameters a statement. */
const ROWS_PER_INSERT = 11;

/**
 * The monthly Cron Trigger: every account's plan renews into an `open` invoice for the period
 * that starts now. Idempotent: (account, period) is unique, so a retried or repeated run adds
 * nothing. Returns how many invoices were created.
 */
export async function renewPlans(db: Db, plans: Plan[], now: number): Promise<number> {
  const period = periodOf(now);
  let created = 0;
  let after = "";
  for (;;) {
    const page = await db.select({ id: accounts.id, plan: accounts.plan }).from(accounts).where(gt(accounts.id, after)).orderBy(asc(accounts.id)).limit(PAGE);
    if (!page.length) return created;
    const rows = page.map((a) => {
      const plan = planOf(plans, a.plan);
      return { id: newId(now), accountId: a.id, amount: plan.price, currency: plan.currency, description: plan.description, status: "open" as const, period, createdAt: now };
    });
    const stmts: BatchItem<"sqlite">[] = [];
    for (let i = 0; i < rows.length; i += ROWS_PER_INSERT)
      stmts.push(db.insert(invoices).values(rows.slice(i, i + ROWS_PER_INSERT)).onConflictDoNothing().returning({ id: invoices.id }));
    const results = stmts.length ? ((await db.batch(stmts as [BatchItem<"sqlite">, ...BatchItem<"sqlite">[]])) as { id: string }[][]) : [];
    created += results.reduce((n, r) => n + r.length, 0);
    after = page.at(-1)!.id;
    if (page.length < PAGE) return created;
  }
}

