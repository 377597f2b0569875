import { and, eq } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { functions, triggers } from "../db/schema.js";
import { ApiError } from "../errors.js";
import { issueTask, type TaskRow } from "../services/tasks.js";
import { admissionColumns, admit } from "../services/admission.js";
import type { TaskInput } from "../../shared/schemas/task.js";
import type { Plan } from "../billing/plans.js";

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
 * Issues a task of `nextId` for every trigger of the finished task's function whose status equals
 * the task's final status. Returns the new tasks for the caller to enqueue. A next function with no
 * successful build cannot run: that trigger is skipped (and logged), the others still fire.
 */
export async function fireTriggers(db: Db, bucket: R2Bucket, plans: Plan[], done: TaskRow): Promise<TaskRow[]> {
  if (done.hop >= MAX_HOPS) return [];
  const now = Date.now();
  const matching = await db
    .select({ trigger: triggers, next: functions, ...admissionColumns(now) })
    .from(triggers)
    .innerJoin(functions, eq(functions.id, triggers.nextId))
    .where(and(eq(triggers.functionId, done.functionId), eq(triggers.status, done.status)));
  if (!matching.length) return [];
  const body = matching.some((m) => m.trigger.includeResult) ? await resultAsBody(bucket, done) : null;
  const issued: TaskRow[] = [];
  for (const { trigger, next, ...admission } of matching) {
    const input: TaskInput = {
      method: "POST",
      query: {},
      headers: trigger.includeResult ? { "content-type": "application/json" } : {},
      body: trigger.includeResult ? body : null,
    };
    try {
      issued.push(
        await issueTask(db, bucket, { accountId: done.accountId, fn: next, buildId: admit(admission, plans, now), input, triggerId: trigger.id, parentTaskId: done.id, hop: done.hop + 1 }, now),
      );
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      console.warn(JSON.stringify({ level: "warn", msg: "trigger skipped", triggerId: trigger.id, reason: e.message }));
    }
  }
  return issued;
}
