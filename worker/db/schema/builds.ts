import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text } from "drizzle-orm/sqlite-core";
import { accounts } from "./accounts.js";
import { functions } from "./functions.js";

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
