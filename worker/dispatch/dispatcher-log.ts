/** The dispatcher's log: one JSON line a record, marked as the dispatcher's. */
export const log = (level: "info" | "warn" | "error", msg: string, extra: Record<string, unknown> = {}) =>
  console[level === "info" ? "log" : level](JSON.stringify({ level, component: "dispatcher", msg, ...extra }));
