import { sql, type SQL } from "drizzle-orm";
import { sqlBatch } from "../db/client.js";
import type { Db } from "../db/client.js";
import { tasks } from "../db/schema.js";
import { stageInput, type NewTask, type StagedInput } from "../tasks/row.js";
import type { TaskRow } from "../db/rows.js";
import type { Refusal } from "../task-life/refusal.js";
import type { TaskInput } from "../../shared/schemas/task.js";
import { MAX_CHAIN_TASKS, MAX_HOPS } from "../chains/limits.js";
import { handOverOf, smallResultAsInput, stageHandOver } from "./result-handover.js";

const NO_BODY: TaskInput = { method: "POST", query: {}, headers: {}, body: null };

/**
 * The triggers of these functions: one query, sent in the same D1 batch that records the finished
 * tasks (see records.ts), so written in SQL. Admission is the next function's shard's.
 */
export function triggerCandidates(functionIds: string[]): SQL {
  const ids = sql.join(functionIds.map((id) => sql`${id}`), sql`, `);
  return sql`select t.id as trigger_id, t.function_id as trigger_function_id, t.status as trigger_status,
      t.include_result as trigger_include_result, t.next_id as trigger_next_id
    from triggers t where t.function_id in (${ids})`;
}

/** A row of triggerCandidates(). */
export function triggerCandidate(raw: Record<string, unknown>) {
  return {
    trigger: { id: raw.trigger_id as string, functionId: raw.trigger_function_id as string, status: raw.trigger_status as number, includeResult: Boolean(raw.trigger_include_result) },
    nextId: raw.trigger_next_id as string,
  };
}
export type TriggerCandidate = ReturnType<typeof triggerCandidate>;

/** What firing needs of a finished task (the dispatcher stores it until its triggers have fired). */
export type ChainParent = Pick<TaskRow, "id" | "accountId" | "functionId" | "status" | "hop" | "chainId" | "resultBody" | "resultKey" | "resultHeaders">;

/** The triggers a finished task fires: its function's, for its final status, below MAX_HOPS. */
export function firesFor(parent: ChainParent, candidates: TriggerCandidate[]): TriggerCandidate[] {
  if (parent.hop >= MAX_HOPS) return [];
  return candidates.filter((m) => m.trigger.functionId === parent.functionId && m.trigger.status === parent.status);
}

/** What firing asks of the shards: places in a chain (at its root's shard), and the tasks themselves (at their functions'). */
export interface ChainShards {
  reserve(chainId: string, taskIds: string[], fresh: boolean): Promise<string[]>;
  release(chainId: string, taskIds: string[]): Promise<void>;
  /** Creates the task on its function's shard; a refusal for good comes back, one for now is thrown. */
  create(functionId: string, o: NewTask, staged: StagedInput, mayExist: boolean): Promise<{ task: TaskRow } | { refused: Refusal }>;
}

/**
 * Issues a task of the next function for every trigger of a finished task's function whose status
 * equals the task's final status. Each task's id comes from `plan` (parent id → trigger id → task
 * id; a trigger not in it does not fire), drawn when the parent's outcome was committed, and the
 * task is created on its function's shard as any task is (admitted there, queued, written to D1
 * later). A firing run again (`again`: after an eviction, a failure) creates none of them twice.
 * A next function that cannot take a task now (no build, gone, its account out of quota or at its
 * pending cap) skips that trigger, logged and never retried; the others still fire. A chain stops
 * at MAX_HOPS, and at MAX_CHAIN_TASKS tasks: triggers past it do not fire, and the parent's log
 * says so.
 */
export async function fireTriggers(db: Db, bucket: R2Bucket, shards: ChainShards, done: ChainParent[], candidates: TriggerCandidate[], plan: Map<string, Record<string, string>>, again: boolean): Promise<void> {
  const notes: { id: string; line: string }[] = [];
  await Promise.all(
    done.map(async (parent) => {
      const fires = firesFor(parent, candidates).flatMap((c) => {
        const id = plan.get(parent.id)?.[c.trigger.id];
        return id ? [{ candidate: c, id }] : [];
      });
      if (!fires.length) return;
      const chainId = parent.chainId ?? parent.id;
      const granted = new Set(await shards.reserve(chainId, fires.map((f) => f.id), parent.hop === 0));
      const cut = fires.length - granted.size;
      if (cut) notes.push({ id: parent.id, line: `[dispatcher] ${cut} trigger(s) not fired: the chain of task ${chainId} reached its limit of ${MAX_CHAIN_TASKS} tasks` });
      const placed = fires.filter((f) => granted.has(f.id));
      // A stored result is read here only to learn its form, piece by piece; each chained task's
      // input is then streamed from it into R2, never held (result-handover.ts).
      const wantsResult = placed.some(({ candidate }) => candidate.trigger.includeResult);
      const handOver = !wantsResult ? null : parent.resultKey ? await handOverOf(bucket, parent.resultKey, parent.resultHeaders) : smallResultAsInput(new TextEncoder().encode(parent.resultBody ?? ""), parent.resultHeaders);
      const refused: string[] = [];
      await Promise.all(
        placed.map(async ({ candidate, id }) => {
          const { trigger, nextId } = candidate;
          const byStream = trigger.includeResult && handOver && "byStream" in handOver ? handOver : null;
          const input: TaskInput = !trigger.includeResult || !handOver ? NO_BODY : "byStream" in handOver ? { ...NO_BODY, headers: { "content-type": handOver.contentType } } : handOver;
          const o: NewTask = { id, accountId: parent.accountId, input, triggerId: trigger.id, parentTaskId: parent.id, hop: parent.hop + 1, chainId };
          const staged = byStream ? await stageHandOver(bucket, parent.resultKey!, byStream, o.accountId, id) : await stageInput(bucket, o, Date.now());
          const made = await shards.create(nextId, o, staged, again);
          if ("refused" in made) {
            refused.push(id);
            console.warn(JSON.stringify({ level: "warn", msg: "trigger skipped", triggerId: trigger.id, reason: made.refused.message }));
          }
        }),
      );
      if (refused.length) await shards.release(chainId, refused);
    }),
  );
  if (notes.length) await chainLimitReached(db, notes);
}

/** Each parent whose chain had no room for all its triggers gets a line in its log (when in D1) saying why. */
async function chainLimitReached(db: Db, notes: { id: string; line: string }[]) {
  for (const n of notes) console.warn(JSON.stringify({ level: "warn", component: "dispatcher", msg: "chain limit reached", parentTaskId: n.id, line: n.line }));
  await sqlBatch(db, [
    sql`update ${tasks} set log = json_insert(tasks.log, '$[#]', o.line)
      from (select json_extract(value, '$.id') as id, json_extract(value, '$.line') as line from json_each(${JSON.stringify(notes)})) as o
      where tasks.id = o.id and tasks.log is not null`,
  ]);
}
