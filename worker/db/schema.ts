import { sql } from "drizzle-orm";
import { index, integer, primaryKey, real, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { EGRESS } from "../../shared/schemas/network.js";

// Times are Unix milliseconds; the API formats them per field (seconds-as-string or ISO 8601).

export const accounts = sqliteTable("accounts", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  plan: text("plan").notNull().default("DEVELOPER"),
  /** The operator's grant to run privileged functions (off by default; see docs/security.md). */
  privileged: integer("privileged", { mode: "boolean" }).notNull().default(false),
  /** The operator's grant to let functions reach the network (off by default; worker/egress/). */
  egress: integer("egress", { mode: "boolean" }).notNull().default(false),
  /** The operator's own values of this account's limits (worker/limits/); absent ones take the defaults. */
  limits: text("limits", { mode: "json" }).$type<Partial<Record<string, number>>>(),
  createdAt: integer("created_at").notNull(),
});

/**
 * Tokens are kept only as SHA-256 hashes. Agent tokens have no account, open agent routes only and
 * speak for one node (`node_id`); agent tokens minted before nodes were bound have none and are refused.
 */
export const tokens = sqliteTable(
  "tokens",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").references(() => accounts.id, { onDelete: "cascade" }),
    kind: text("kind", { enum: ["user", "agent"] }).notNull(),
    name: text("name"),
    nodeId: text("node_id"),
    hash: text("hash").notNull(),
    createdAt: integer("created_at").notNull(),
    revokedAt: integer("revoked_at"),
  },
  (t) => [uniqueIndex("tokens_hash").on(t.hash)],
);

/**
 * Every node that has said hello: what it last reported (for the fleet list) and the operator's
 * flags. A disabled node is refused at connect; a draining one finishes its work and takes no more.
 */
export const nodes = sqliteTable("nodes", {
  id: text("id").primaryKey(),
  agentVersion: text("agent_version"),
  runtime: text("runtime"),
  slots: integer("slots").notNull(),
  langs: text("langs", { mode: "json" }).$type<string[]>().notNull(),
  privileged: integer("privileged", { mode: "boolean" }).notNull(),
  /** Its agent was started with `--egress` (hello `egress`): it runs functions that reach the network. */
  egress: integer("egress", { mode: "boolean" }).notNull().default(false),
  connectedAt: integer("connected_at"),
  lastSeen: integer("last_seen").notNull(),
  draining: integer("draining", { mode: "boolean" }).notNull().default(false),
  disabled: integer("disabled", { mode: "boolean" }).notNull().default(false),
  createdAt: integer("created_at").notNull(),
});

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

export const builds = sqliteTable(
  "builds",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
    functionId: text("function_id").notNull().references(() => functions.id, { onDelete: "cascade" }),
    lang: text("lang").notNull(),
    status: text("status", { enum: ["PENDING", "BUILDING", "SUCCESS", "FAILED"] }).notNull(),
    arch: text("arch", { mode: "json" }).$type<string[]>().notNull(),
    timeline: text("timeline", { mode: "json" }).$type<{ status: string; time: string }[]>().notNull(),
    zipKey: text("zip_key").notNull(),
    zipSize: integer("zip_size").notNull(),
    artifactKey: text("artifact_key"),
    /** When its zip and artifact were deleted from R2 (worker/limits/artifact-eviction.ts); the record stays. */
    evictedAt: integer("evicted_at"),
    createdAt: integer("created_at").notNull(),
  },
  (t) => [
    index("builds_account").on(t.accountId, t.id),
    index("builds_function").on(t.functionId, t.status),
    // The queued-builds limit counts an account's open builds on every upload.
    index("builds_account_open").on(t.accountId).where(sql`${t.status} in ('PENDING', 'BUILDING')`),
  ],
);

/**
 * A function's release (worker/releases/): which build its new tasks run. No row, or a null
 * `build_id`, follows the newest successful build; a canary sends `canary_weight` percent of new
 * tasks to `canary_build_id`. A table of its own so that the functions row, read on every issue,
 * keeps its shape; the issuing statement reads this row by primary key in the same round trip.
 */
export const releases = sqliteTable("releases", {
  functionId: text("function_id").primaryKey().references(() => functions.id, { onDelete: "cascade" }),
  accountId: text("account_id").notNull(),
  buildId: text("build_id").references(() => builds.id, { onDelete: "set null" }),
  canaryBuildId: text("canary_build_id").references(() => builds.id, { onDelete: "set null" }),
  canaryWeight: integer("canary_weight"),
  updatedAt: integer("updated_at").notNull(),
});

/**
 * A build's log as the build record shows it: one row a build, its first and last lines (each part
 * bounded in lines and bytes, shared/build-log.ts) and how many lines it had in all. The whole text
 * is one R2 object (buildLogKey). Written by the build's dispatcher as agents report lines.
 */
export const buildLogEnds = sqliteTable("build_log_ends", {
  buildId: text("build_id").primaryKey().references(() => builds.id, { onDelete: "cascade" }),
  head: text("head", { mode: "json" }).$type<string[]>().notNull(),
  tail: text("tail", { mode: "json" }).$type<string[]>().notNull(),
  lines: integer("lines").notNull(),
});

/**
 * The former log store, a row per line: no longer written. Builds recorded before build_log_ends
 * still read from it (worker/build-logs/ends.ts); their rows go with their builds.
 */
export const legacyBuildLogs = sqliteTable(
  "build_logs",
  {
    buildId: text("build_id").notNull().references(() => builds.id, { onDelete: "cascade" }),
    seq: integer("seq").notNull(),
    line: text("line").notNull(),
  },
  (t) => [primaryKey({ columns: [t.buildId, t.seq] })],
);

/**
 * Tasks outlive their function (finished tasks stay readable after a delete), so
 * `function_id` is not a foreign key.
 */
export const tasks = sqliteTable(
  "tasks",
  {
    id: text("id").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
    functionId: text("function_id").notNull(),
    lang: text("lang").notNull(),
    buildId: text("build_id"),
    endpointId: text("endpoint_id"),
    triggerId: text("trigger_id"),
    parentTaskId: text("parent_task_id"),
    /** The first task of the chain a triggered task belongs to (null for that first task): chains are counted by it. */
    chainId: text("chain_id"),
    hop: integer("hop").notNull().default(0),
    issuedAt: integer("issued_at").notNull(),
    assignedAt: integer("assigned_at"),
    finishedAt: integer("finished_at"),
    progress: integer("progress").notNull().default(0),
    status: integer("status").notNull().default(0),
    node: text("node"),
    timeout: integer("timeout").notNull(),
    cpuCount: real("cpu_count").notNull(),
    memSize: integer("mem_size").notNull(),
    privileged: integer("privileged", { mode: "boolean" }).notNull(),
    /** Its function's egress when issued: the dispatcher places an "internet" task only on a node that allows it. */
    egress: text("egress", { enum: EGRESS }).notNull().default("none"),
    networkLatency: integer("network_latency").notNull().default(0),
    /** The container runtime the task ran under on its node (runsc for gVisor, runc), as the agent reported it. */
    runtime: text("runtime"),
    /** The task's input as JSON when small; larger inputs live in R2 under `inputKey`. */
    input: text("input"),
    inputKey: text("input_key"),
    resultStatus: integer("result_status"),
    resultHeaders: text("result_headers", { mode: "json" }).$type<Record<string, string>>(),
    resultBody: text("result_body"),
    resultKey: text("result_key"),
    /** The log as JSON when small; larger logs live in R2 under `logKey` (see dispatch/records.ts). */
    log: text("log", { mode: "json" }).$type<string[]>(),
    logKey: text("log_key"),
    durationMs: integer("duration_ms"),
    /** Attempts started so far (worker/retries/): 0 while it waits for its first, more after retries. */
    attempts: integer("attempts").notNull().default(0),
    /** When the retention sweep deleted input, result and log (services/retention.ts); reads then answer 410. */
    purgedAt: integer("purged_at"),
    /** The schedule that issued the task (worker/schedules/); not a foreign key, as tasks outlive it. */
    scheduledId: text("scheduled_id"),
  },
  (t) => [
    index("tasks_account").on(t.accountId, t.id),
    index("tasks_function").on(t.functionId, t.issuedAt),
    // Only an endpoint's metrics read it (endpoint_id = ?, which implies not null): most tasks have no endpoint and no entry.
    index("tasks_endpoint").on(t.endpointId, t.issuedAt).where(sql`${t.endpointId} is not null`),
    // Admission counts an account's unfinished tasks on every issue; the sweep reads only what it purges.
    index("tasks_account_unfinished").on(t.accountId).where(sql`${t.finishedAt} is null`),
    index("tasks_unpurged").on(t.finishedAt).where(sql`${t.purgedAt} is null`),
    index("tasks_chain").on(t.chainId).where(sql`chain_id is not null`),
  ],
);

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

/**
 * The task archive's index (worker/task-history/): one row a chunk of finished task records that
 * left `tasks` for R2 (`history/<account>/<first id>-<last id>.ndjson.gz`). A chunk holds one
 * account's records, up to 2,000, in id order; a record's D1 cost is its share of this row (well
 * under a byte). Reads find a record's chunk by its id and account, a list's chunks by their ids.
 */
export const taskArchive = sqliteTable(
  "task_archive",
  {
    key: text("key").primaryKey(),
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
    firstId: text("first_id").notNull(),
    lastId: text("last_id").notNull(),
    records: integer("records").notNull(),
    /** The chunk's size in R2 (gzip), for the operator's arithmetic. */
    bytes: integer("bytes").notNull(),
    /** Where each gzip segment of the object begins, [first id, byte offset] (task-history/chunk.ts): a get reads one. */
    segments: text("segments", { mode: "json" }).$type<[string, number][]>().notNull(),
    /** The earliest finish among its records retention has not purged yet; null once all are. */
    purgeDue: integer("purge_due"),
    archivedAt: integer("archived_at").notNull(),
  },
  (t) => [
    // With first_id in it, a record's chunk (first_id <= id <= last_id) is found from the index alone.
    index("task_archive_account").on(t.accountId, t.lastId, t.firstId),
    index("task_archive_purge").on(t.purgeDue).where(sql`${t.purgeDue} is not null`),
  ],
);

/**
 * The functions of each chunk, a row per function a chunk holds: a function's list finds its chunks
 * through this key (function, last id), newest first, however rare the function is in its account.
 * A chunk is one account's, and a function belongs to one account, so (function, last id) names a
 * chunk; the chunk's row is found by (account, last id) in task_archive's index.
 */
export const taskArchiveFunctions = sqliteTable(
  "task_archive_functions",
  {
    functionId: text("function_id").notNull(),
    lastId: text("last_id").notNull(),
    firstId: text("first_id").notNull(),
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
  },
  (t) => [primaryKey({ columns: [t.functionId, t.lastId] })],
);

/**
 * Archived tasks per account and function, all time: an account's completed tasks sum a row per
 * function (task_archive_counts' rows per day would grow with every day of history).
 */
export const taskArchiveTotals = sqliteTable(
  "task_archive_totals",
  {
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
    functionId: text("function_id").notNull(),
    tasks: integer("tasks").notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.functionId] })],
);

/**
 * Archived tasks per function and UTC day of issue, kept by the archiver in the batch that moves
 * them: the counts that outlive their rows, for the console's daily chart.
 */
export const taskArchiveCounts = sqliteTable(
  "task_archive_counts",
  {
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
    functionId: text("function_id").notNull(),
    /** Start of the UTC day of issue, Unix milliseconds. */
    day: integer("day").notNull(),
    tasks: integer("tasks").notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.functionId, t.day] })],
);

/**
 * Archived tasks per chain (the tasks with this `chain_id`, as D1 counts them): a chain its root's
 * shard has forgotten is counted again from D1's rows and these (worker/chains/places.ts), so its
 * tasks that left D1 still count towards MAX_CHAIN_TASKS.
 */
export const taskArchiveChains = sqliteTable("task_archive_chains", {
  chainId: text("chain_id").primaryKey(),
  accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
  tasks: integer("tasks").notNull(),
});
