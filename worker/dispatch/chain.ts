import { sql, type SQL } from "drizzle-orm";
import { rowOf } from "../db/client.js";
import type { Db } from "../db/client.js";
import { functions } from "../db/schema.js";
import { ApiError } from "../errors.js";
import { issueTask, type TaskRow } from "../services/tasks.js";
import { admissionColumns, admit, type AdmissionLimits } from "../services/admission.js";
import type { TaskInput } from "../../shared/schemas/task.js";
import { periodOf } from "../billing/plans.js";

/** A chain stops after 10 hops from its first task (a self-trigger included). */
export const MAX_HOPS = 10;

/** The next function's body: the first task's response, as JSON when it parses, else a JSON string. */
export async function resultAsBody(bucket: R2Bucket, t: TaskRow): Promise<string> {
  let text = t.resultBody ?? "";
  if (t.resultKey) text = (await (await bucket.get(t.resultKey))?.text()) ?? "";
  try {
    JSON.parse(text);
    return text;
  } catch {
    return JSON.stringify(text);
  }
}

/**
 * The triggers of these functions with their next function and its admission columns: one query,
 * sent in the same D1 batch that records the finished tasks (see records.ts), so written in SQL.
 */
export function triggerCandidates(functionIds: string[], now: number): SQL {
  const { buildId, plan, used, pending } = admissionColumns(periodOf(now));
  const ids = sql.join(functionIds.map((id) => sql`${id}`), sql`, `);
  return sql`select functions.*, t.id as trigger_id, t.function_id as trigger_function_id, t.status as trigger_status,
      t.include_result as trigger_include_result, ${buildId} as admission_build_id, ${plan} as admission_plan, ${used} as admission_used,
      ${pending} as admission_pending
    from triggers t join functions on functions.id = t.next_id
    where t.function_id in (${ids})`;
}

/** A row of triggerCandidates(). */
export function triggerCandidate(raw: Record<string, unknown>) {
  return {
    trigger: { id: raw.trigger_id as string, functionId: raw.trigger_function_id as string, status: raw.trigger_status as number, includeResult: Boolean(raw.trigger_include_result) },
    next: rowOf(functions, raw),
    buildId: raw.admission_build_id as string | null,
    plan: raw.admission_plan as string,
    used: raw.admission_used as number,
    pending: raw.admission_pending as number,
  };
}
export type TriggerCandidate = ReturnType<typeof triggerCandidate>;

/**
 * Issues a task of `nextId` for every trigger of the finished task's function whose status equals
 * the task's final status. Returns the new tasks for the caller to enqueue. A next function with no
 * successful build cannot run, nor one whose account is out of quota or at its pending cap: that
 * trigger is skipped (and logged, never retried), the others still fire.
 */
export async function fireTriggers(db: Db, bucket: R2Bucket, limits: AdmissionLimits, done: TaskRow, candidates: TriggerCandidate[], newTaskId: (functionId: string) => string): Promise<TaskRow[]> {
  if (done.hop >= MAX_HOPS) return [];
  const now = Date.now();
  const matching = candidates.filter((m) => m.trigger.functionId === done.functionId && m.trigger.status === done.status);
  if (!matching.length) return [];
  const body = matching.some((m) => m.trigger.includeResult) ? await resultAsBody(bucket, done) : null;
  const issued: TaskRow[] = [];
  for (const candidate of matching) {
    const { trigger, next } = candidate;
    const input: TaskInput = {
      method: "POST",
      query: {},
      headers: trigger.includeResult ? { "content-type": "application/json" } : {},
      body: trigger.includeResult ? body : null,
    };
    try {
      issued.push(
        await issueTask(db, bucket, { id: newTaskId(next.id), accountId: done.accountId, fn: next, buildId: admit(candidate, limits, now), input, triggerId: trigger.id, parentTaskId: done.id, hop: done.hop + 1 }, now),
      );
      // The candidates' counts were read once for the whole batch: each task issued from them
      // reserves its invocation there too, or a fan-out would pass the plan and the pending cap.
      for (const c of candidates) if (c.next.accountId === done.accountId) c.pending++;
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      console.warn(JSON.stringify({ level: "warn", msg: "trigger skipped", triggerId: trigger.id, reason: e.message }));
    }
  }
  return issued;
}
