/**
 * The D1 schema, one file a part of the service (drizzle-kit reads it all through this file, and
 * migrations/ are generated from it). Times are Unix milliseconds; the API formats them per field
 * (seconds-as-string or ISO 8601).
 */
export * from "./schema/accounts.js";
export * from "./schema/functions.js";
export * from "./schema/builds.js";
export * from "./schema/tasks.js";
export * from "./schema/billing.js";
export * from "./schema/leases.js";
export * from "./schema/task-archive.js";
