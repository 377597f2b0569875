import { index, integer, primaryKey, real, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { EGRESS } from "../../../shared/schemas/network.js";
import { accounts } from "./accounts.js";

export const functions = sqliteTable(
  "functions",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    description: text("description").notNull().default(""),
    lang: text("lang").notNull(),
    type: text("type").notNull(),
    paused: integer("paused", { mode: "boolean" }).notNull().default(false),
    timeout: integer("timeout").notNull(),
    cpuCount: real("cpu_count").notNull(),
    memSize: integer("mem_size").notNull(),
    privileged: integer("privileged", { mode: "boolean" }).notNull(),
    /** What the function may reach beyond itself: "none" (no network) or "internet" (public addresses; worker/egress/). */
    egress: text("egress", { enum: EGRESS }).notNull().default("none"),
    createdAt: integer("created_at").notNull(),
    /** Retries of its asynchronous tasks (worker/retries/): attempts in all, the first backoff, the dead-letter function. */
    retryMaxAttempts: integer("retry_max_attempts").notNull().default(1),
    retryBackoffSeconds: integer("retry_backoff_seconds").notNull().default(10),
    deadLetterFunctionId: text("dead_letter_function_id"),
    /** At most this many of its tasks run at once (worker/concurrency/); null: no cap beyond the account's. */
    concurrencyMax: integer("concurrency_max"),
  },
  (t) => [index("functions_account").on(t.accountId, t.id)],
);

export const tags = sqliteTable(
  "tags",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    color: text("color").notNull(),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("tags_account").on(t.accountId, t.id)],
);

/** Tags attached to functions, triggers and endpoints; `position` keeps the order the caller gave. */
export const tagLinks = sqliteTable(
  "tag_links",
  {
    recordId: text("record_id").notNull(),
    tagId: text("tag_id").notNull().references(() => tags.id, { onDelete: "cascade" }),
    position: integer("position").notNull(),
  },
  (t) => [primaryKey({ columns: [t.recordId, t.tagId] }), index("tag_links_tag").on(t.tagId)],
);

export const triggers = sqliteTable(
  "triggers",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
    functionId: text("function_id").notNull().references(() => functions.id, { onDelete: "cascade" }),
    nextId: text("next_id").notNull().references(() => functions.id, { onDelete: "cascade" }),
    status: integer("status").notNull(),
    includeResult: integer("include_result", { mode: "boolean" }).notNull(),
    description: text("description").notNull().default(""),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("triggers_account").on(t.accountId, t.id), index("triggers_function").on(t.functionId, t.status)],
);

export const endpoints = sqliteTable(
  "endpoints",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
    functionId: text("function_id").notNull().references(() => functions.id, { onDelete: "cascade" }),
    description: text("description").notNull().default(""),
    dailyLimit: integer("daily_limit").notNull().default(-1),
    origin: text("origin", { mode: "json" }).$type<string[]>().notNull(),
    ip: text("ip", { mode: "json" }).$type<string[]>().notNull(),
    timeFrom: text("time_from"),
    timeTo: text("time_to"),
    timezone: text("timezone"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("endpoints_account").on(t.accountId, t.id), index("endpoints_function").on(t.functionId)],
);

/**
 * Scheduled runs of a function (worker/schedules/). The payload's body lives in R2 under the
 * function's prefix; `payloadSetAt` is null until one is set.
 */
export const schedules = sqliteTable(
  "schedules",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
    functionId: text("function_id").notNull().references(() => functions.id, { onDelete: "cascade" }),
    active: integer("active", { mode: "boolean" }).notNull().default(true),
    cron: text("cron").notNull(),
    timezone: text("timezone").notNull(),
    description: text("description").notNull().default(""),
    payloadQuery: text("payload_query"),
    payloadContentType: text("payload_content_type"),
    payloadSetAt: integer("payload_set_at"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [index("schedules_account").on(t.accountId, t.id), index("schedules_function").on(t.functionId)],
);

/**
 * A function's storage (the original service's `GC-Storage` header): the value the last finished
 * task set. Small values live in the row (base64); larger ones (up to 1 MiB) in R2 under `valueKey`.
 * The dispatcher keeps its own copy to hand the value to the next task; this row is what the
 * owner reads.
 */
export const functionStorage = sqliteTable("function_storage", {
  functionId: text("function_id").primaryKey().references(() => functions.id, { onDelete: "cascade" }),
  accountId: text("account_id").notNull(),
  value: text("value"),
  valueKey: text("value_key"),
  size: integer("size").notNull(),
  /** The setting task's finish time: a later finish wins, whatever order the writes arrive in. */
  setAt: integer("set_at").notNull(),
  taskId: text("task_id").notNull(),
});

/**
 * A function's environment variables and secrets (worker/function-config/): one row a name, so a
 * variable and a secret can never share one. A variable's value is stored as is; a secret's is
 * AES-GCM ciphertext under the SECRETS_KEY Worker secret (secret-box.ts), never the value.
 */
export const functionConfig = sqliteTable(
  "function_config",
  {
    functionId: text("function_id").notNull().references(() => functions.id, { onDelete: "cascade" }),
    name: text("name").notNull(),
    kind: text("kind", { enum: ["env", "secret"] }).notNull(),
    value: text("value").notNull(),
    /** Bytes the entry takes in a task's assignment frame (its name and value as JSON): bounds the frame. */
    size: integer("size").notNull(),
    updatedAt: integer("updated_at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.functionId, t.name] })],
);
