import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { accounts } from "./accounts.js";

export const invoices = sqliteTable(
  "invoices",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
    amount: real("amount").notNull(),
    currency: text("currency").notNull().default("usd"),
    description: text("description").notNull(),
    status: text("status", { enum: ["open", "succeeded", "failed", "void"] }).notNull(),
    period: text("period").notNull(),
    paidAt: integer("paid_at"),
    cardBrand: text("card_brand"),
    cardLast4: text("card_last4"),
    receiptUrl: text("receipt_url"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("invoices_account").on(t.accountId, t.id), uniqueIndex("invoices_period").on(t.accountId, t.period)],
);

/**
 * One row a metered task (finished, any outcome but cancelled), keyed by task: what makes metering
 * exactly-once. Read by nothing but that check; usage_totals holds the sums. Deleted after
 * USAGE_DEDUP_DAYS by the hourly sweep (services/usage-pruning.ts). No index but the key: nothing
 * reads these rows by account or period, and an index would cost bytes on every row of the window
 * (an account's deletion, which nothing does today, would scan the window's rows for its cascade).
 */
export const usage = sqliteTable(
  "usage",
  {
    taskId: text("task_id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
    functionId: text("function_id").notNull(),
    /** Calendar month (UTC) of the finish, e.g. "2026-11": the billing period. */
    period: text("period").notNull(),
    finishedAt: integer("finished_at").notNull(),
    durationMs: integer("duration_ms").notNull(),
    memMiB: integer("mem_mib").notNull(),
  },
);

/**
 * The usage rows of one account and billing period, added up: what quotas (every task's admission)
 * and `GET /v1/usage` read, in one row rather than a count over a month of tasks. Kept by a trigger
 * on `usage` (migrations/0016_usage_totals_trigger.sql), so it moves in the same statement as the
 * row it counts, exactly once: a re-delivered outcome inserts no usage row, and fires nothing.
 */
export const usageTotals = sqliteTable(
  "usage_totals",
  {
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
    period: text("period").notNull(),
    invocations: integer("invocations").notNull().default(0),
    durationMs: integer("duration_ms").notNull().default(0),
    /** Sum of duration × billed memory (MiB·ms), for GB-seconds. */
    mibMs: integer("mib_ms").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.period] })],
);

/** Payment-provider events already applied: a redelivered event changes nothing. */
export const webhookEvents = sqliteTable("webhook_events", {
  id: text("id").primaryKey(),
  type: text("type").notNull(),
  receivedAt: integer("received_at").notNull(),
});

/**
 * What one dispatcher shard metered of an account's period (worker/shard-metering/): sums it keeps
 * and sends absolute, each written as the max of what D1 has and what arrives, so a batch sent again
 * (its answer lost) moves nothing. Triggers add each row's growth to usage_totals
 * (migrations/0034_shard_usage.sql). One row an account, period and shard, whatever the tasks.
 */
export const shardUsage = sqliteTable(
  "shard_usage",
  {
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
    period: text("period").notNull(),
    shard: text("shard").notNull(),
    invocations: integer("invocations").notNull().default(0),
    durationMs: integer("duration_ms").notNull().default(0),
    mibMs: integer("mib_ms").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.period, t.shard] })],
);

/**
 * Holds a row only inside a shard's batch (inserted first, deleted last, so never seen outside it:
 * a D1 batch is one transaction): while it does, the update that finishes a task's row meters
 * nothing (`tasks_metered`), since the shard meters it. A Worker from before migration 0034, during
 * its deploy, never writes it, and its outcomes are metered by the update as before.
 */
export const meteringInShard = sqliteTable("metering_in_shard", {
  batch: integer("batch").primaryKey(),
});
