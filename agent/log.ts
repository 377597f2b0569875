/** Structured logs: one JSON object a line on stdout, for journald or any collector. */
export function log(level: "debug" | "info" | "warn" | "error", msg: string, fields: Record<string, unknown> = {}): void {
  if (level === "debug" && !process.env.GCFAAS_DEBUG) return;
  process.stdout.write(`${JSON.stringify({ time: new Date().toISOString(), level, msg, ...fields })}\n`);
}
