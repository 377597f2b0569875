import type { builds, functions, tasks } from "./schema.js";

/** Rows as drizzle reads them, named once for every layer (storage, services, dispatch). */
export type TaskRow = typeof tasks.$inferSelect;
export type BuildRow = typeof builds.$inferSelect;
export type FunctionRow = typeof functions.$inferSelect;
