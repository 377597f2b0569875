import { sql } from "drizzle-orm";
import { index, integer, real, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { EGRESS } from "../../../shared/schemas/network.js";
import { accounts } from "./accounts.js";

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
