import { sql } from "drizzle-orm";
import { customType, index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";
import { accounts } from "./accounts.js";
import { decodeSegments, encodeSegments, type Segments } from "../archive-segments.js";

/** A chunk's segments, as text of either form (archive-segments.ts); a row whose text is not segments fails its read. */
const segmentsText = customType<{ data: Segments; driverData: string }>({
  dataType: () => "text",
  toDriver: encodeSegments,
  fromDriver: (text) => {
    const segments = decodeSegments(text);
    if (!segments) throw new Error("an archived chunk's index row names segments that are not segments");
    return segments;
  },
});

/**
 * The task archive's index (worker/task-history/): one row a chunk of finished task records that
 * left `tasks` for R2 (`history/<account>/<first id>-<last id>-<records>.ndjson.gz`). A chunk holds
 * one account's records, up to 1,000, in id order; a record's D1 cost is its share of this row (well
 * under a byte). Reads find a record's chunk by its id and account, a list's chunks by their ids.
 * A chunk is named by its row's columns (chunk-names.ts), so a row written since migration 0031
 * keeps no name (the name and its index were ~0.3 B of a busy record's ~0.8 B).
 */
export const taskArchive = sqliteTable(
  "task_archive",
  {
    /** The chunk's name, only when its columns do not make it: chunks named before the count was part of names. */
    legacyKey: text("key"),
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
    firstId: text("first_id").notNull(),
    lastId: text("last_id").notNull(),
    records: integer("records").notNull(),
    /** The chunk's size in R2 (gzip), for the operator's arithmetic. */
    bytes: integer("bytes").notNull(),
    /** Where each gzip segment of the object begins, [key, byte offset] (archive-segments.ts): a get reads one. */
    segments: segmentsText("segments").notNull(),
    /** The earliest finish among its records retention has not purged yet; null once all are. */
    purgeDue: integer("purge_due"),
    archivedAt: integer("archived_at").notNull(),
  },
  (t) => [
    // With first_id in it, a record's chunk (first_id <= id <= last_id) is found from the index alone.
    index("task_archive_account").on(t.accountId, t.lastId, t.firstId),
    // Unique as the primary key was, for the code before 0031 that may run on this schema until the
    // deploy that follows it (its insert names the key as its conflict). A null name's entry is a few bytes.
    uniqueIndex("task_archive_key").on(t.legacyKey),
    index("task_archive_purge").on(t.purgeDue).where(sql`${t.purgeDue} is not null`),
  ],
);

/**
 * The functions of each chunk, a row per function a chunk holds: a function's list finds its chunks
 * through this key (account, function, last id), newest first, however rare the function is in its
 * account. The chunk's row, and its first id, are found by (account, last id) in task_archive's
 * index. WITHOUT ROWID (migration 0028): the key is the table. The account leads the key (migration
 * 0030) so that an account's deletion finds its rows by the key, where it scanned the table.
 */
export const taskArchiveFunctions = sqliteTable(
  "task_archive_functions",
  {
    functionId: text("function_id").notNull(),
    lastId: text("last_id").notNull(),
    accountId: text("account_id").notNull().references(() => accounts.id, { onDelete: "cascade" }),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.functionId, t.lastId] })],
);

/**
 * Archived tasks per account and function, all time: an account's completed tasks sum a row per
 * function (task_archive_counts' rows per day would grow with every day of history). WITHOUT ROWID
 * (migration 0028).
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
 * them: the counts that outlive their rows, for the console's daily chart and an account's
 * `todayTasks`. Both read an account's days, which the key `(account, day, function)` holds in
 * order: a row per function and day, so its bytes grow with days and functions, not tasks. WITHOUT
 * ROWID (migration 0028; drizzle cannot say so): the key is the table, one b-tree where a rowid
 * table, its key's index and a covering index were three.
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
  (t) => [primaryKey({ columns: [t.accountId, t.day, t.functionId] })],
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

/**
 * The issue times of archived tasks of the last 7 days, one row per function (or endpoint) and
 * minute of issue: how many, and each one's milliseconds into the minute, comma-separated. A
 * function's and an endpoint's `todaysTasks` and `weekTasks` (a rolling 7 × 24 hours, which per-day
 * counts cannot answer) add these to D1's rows, so the window of full rows need not hold a week: the
 * minutes wholly inside the period count by `tasks`, through the covering index, and the one minute
 * its start cuts by its offsets, so the count is exact and reads at most an index entry a minute of
 * the week (10,080), however many tasks. The move adds a chunk's tasks in the batch that deletes
 * their rows; the hourly sweep deletes the minutes past the week from the head of the key.
 * WITHOUT ROWID (migration 0025; drizzle cannot say so): the key is the table, oldest minute first,
 * with no rowid index beside it. `scope` is a function's id, or an endpoint's for tasks that came
 * through one (each task counts under both): ids are unique across both, and to their account, so
 * there is no account column; a deleted account's rows leave with the week.
 */
export const taskArchiveMinutes = sqliteTable(
  "task_archive_minutes",
  {
    /** The minute's start, ms since the epoch. */
    minute: integer("minute").notNull(),
    scope: text("scope").notNull(),
    tasks: integer("tasks").notNull(),
    /** Each task's issue time minus `minute` (0 to 59,999), comma-separated. */
    offsets: text("offsets").notNull(),
  },
  (t) => [primaryKey({ columns: [t.minute, t.scope] }), index("task_archive_minutes_scope").on(t.scope, t.minute, t.tasks)],
);

/**
 * The archive's move's marks of chunks it may be writing: one row a read of an account's records
 * (its first and last id), written in the read's own D1 batch, before any chunk of it is put in R2,
 * and deleted in the batch that indexes them. An invocation killed between the put and that batch
 * (its CPU limit, an eviction) leaves the mark behind, and the archive sweep later deletes the
 * chunks in its range that no index row names (task-history/unindexed-chunks.ts): an unindexed chunk
 * is never read, but would hold its records' inputs, results and logs past their retention. No
 * foreign key: a deleted account's leftover chunks go the same way.
 */
export const taskArchivePending = sqliteTable(
  "task_archive_pending",
  {
    accountId: text("account_id").notNull(),
    firstId: text("first_id").notNull(),
    lastId: text("last_id").notNull(),
    /** The run's time (ms): a mark is looked at once it is old enough that its run cannot still be going. */
    at: integer("at").notNull(),
  },
  (t) => [primaryKey({ columns: [t.accountId, t.firstId, t.at] }), index("task_archive_pending_at").on(t.at)],
);

/**
 * Since when the dispatcher shards count every task's issue (step 3 of the shard-resident history,
 * docs/dispatch.md): a whole minute, set once by the migration that made the table. A function's
 * and an endpoint's counts ask the shards from then on, and the move writes no issue minutes for
 * tasks issued since, so task_archive_minutes drains within the week after.
 */
export const issueCountsFrom = sqliteTable("issue_counts_from", {
  fromMs: integer("from_ms").notNull(),
  /**
   * Since when (a UTC midnight, migration 0033) the shards count an account's tasks by the hour: its
   * `todayTasks` from a day that begins there on is theirs alone. Null until that migration.
   */
  accountsFromMs: integer("accounts_from_ms"),
});
