import { integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { accounts } from "./accounts.js";

/**
 * Invocations of an account's plan leased to one dispatcher shard for one billing period
 * (worker/shard-admission/leases.ts), so that the shard admits tasks without a D1 query.
 * `granted` only grows; `settled` counts the shard's tasks of that period that ended (metered or
 * not) and `returned` the leased invocations it gave back, both absolute and written with max(),
 * so a retried write never counts twice. The period's used invocations (usage_totals) plus every
 * shard's `granted - settled - returned` never exceed the plan while D1 answers (docs/dispatch.md,
 * "Admission in the shard").
 */
export const invocationLeases = sqliteTable(
  "invocation_leases",
  {
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
    period: text("period").notNull(),
    shard: text("shard").notNull(),
    granted: integer("granted").notNull().default(0),
    settled: integer("settled").notNull().default(0),
    returned: integer("returned").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.period, t.shard] })],
);

/**
 * Slots of an account's pending cap (MAX_PENDING_TASKS) one shard holds for its unfinished tasks,
 * absolute, set by the shard: the shards' `held` add up to at most the cap while D1 answers.
 */
export const slotLeases = sqliteTable(
  "slot_leases",
  {
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
    shard: text("shard").notNull(),
    held: integer("held").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.shard] })],
);
