import type { StoreBindings } from "../bindings.js";
import { DAY_MS } from "../lib/time.js";

/** Days a finished task's input, result and log are kept (TASK_RETENTION_DAYS overrides). */
export const DEFAULT_TASK_RETENTION_DAYS = 30;

export function retentionMs(env: Pick<StoreBindings, "TASK_RETENTION_DAYS">): number {
  const days = Number(env.TASK_RETENTION_DAYS ?? DEFAULT_TASK_RETENTION_DAYS);
  return (Number.isFinite(days) && days > 0 ? days : DEFAULT_TASK_RETENTION_DAYS) * DAY_MS;
}
