import { getTableColumns, sql, type SQL } from "drizzle-orm";
import { rowOf, sqlBatch } from "../db/client.js";
import type { Db } from "../db/client.js";
import { functions, tasks } from "../db/schema.js";
import { ApiError } from "../errors.js";
import { stageInput, taskRow, type NewTask } from "../tasks/row.js";
import type { TaskRow } from "../db/rows.js";
import { admissionColumns, admit, type AdmissionLimits } from "../tasks/admission.js";
import type { TaskInput } from "../../shared/schemas/task.js";
import { periodOf } from "../billing/plans.js";
import { handOverOf, smallResultAsInput, stageHandOver } from "./result-handover.js";

const NO_BODY: TaskInput = { method: "POST", query: {}, headers: {}, body: null };

/** A chain stops after 10 hops from its first task (a self-trigger included). */
export const MAX_HOPS = 10;

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

/** A chain issues at most this many tasks after its first, in all (counted in D1 by chain_id). */
export const MAX_CHAIN_TASKS = 100;

type ChainedRow = ReturnType<typeof taskRow>;

/** What firing needs of a finished task (the dispatcher stores it until its triggers have fired). */
export type ChainParent = Pick<TaskRow, "id" | "accountId" | "functionId" | "status" | "hop" | "chainId" | "resultBody" | "resultKey" | "resultHeaders">;

/** The triggers a finished task fires: its function's, for its final status, below MAX_HOPS. */
export function firesFor(parent: ChainParent, candidates: TriggerCandidate[]): TriggerCandidate[] {
  if (parent.hop >= MAX_HOPS) return [];
  return candidates.filter((m) => m.trigger.functionId === parent.functionId && m.trigger.status === parent.status);
}

/**
 * Issues a task of the next function for every trigger of a finished task's function whose status
 * equals the task's final status, for many finished tasks at once: one insert for all of them.
 * Each task's id comes from `plan` (parent id → trigger id → task id; a trigger not in it does not
 * fire), drawn when the parent's outcome was committed: a firing run again after an eviction
 * inserts none of them twice and returns those still unfinished, to enqueue again (an enqueue is
 * idempotent). A next function with no successful build cannot run, nor one whose account is out
 * of quota or at its pending cap: that trigger is skipped (and logged, never retried), the others
 * still fire. A chain stops at MAX_HOPS, and at MAX_CHAIN_TASKS tasks: triggers past it do not
 * fire, and the parent's log says so. Returns the unfinished tasks to enqueue.
 */
export async function fireTriggers(db: Db, bucket: R2Bucket, limits: AdmissionLimits, done: ChainParent[], candidates: TriggerCandidate[], plan: Map<string, Record<string, string>>): Promise<TaskRow[]> {
  const now = Date.now();
  const planned: Promise<ChainedRow>[] = [];
  const ids: string[] = [];
  for (const parent of done) {
    const fires = firesFor(parent, candidates).flatMap((c) => {
      const id = plan.get(parent.id)?.[c.trigger.id];
      return id ? [{ candidate: c, id }] : [];
    });
    if (!fires.length) continue;
    // A stored result is read here only to learn its form, piece by piece; each chained task's
    // input is then streamed from it into R2, never held (result-handover.ts).
    const wantsResult = fires.some(({ candidate }) => candidate.trigger.includeResult);
    const handOver = !wantsResult ? null : parent.resultKey ? await handOverOf(bucket, parent.resultKey, parent.resultHeaders) : smallResultAsInput(new TextEncoder().encode(parent.resultBody ?? ""), parent.resultHeaders);
    for (const { candidate, id } of fires) {
      const { trigger, next } = candidate;
      // Looked for even when refused now: an earlier run of this firing may have inserted it.
      ids.push(id);
      let buildId: string;
      try {
        buildId = admit(candidate, limits, now);
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        console.warn(JSON.stringify({ level: "warn", msg: "trigger skipped", triggerId: trigger.id, reason: e.message }));
        continue;
      }
      // The candidates' counts were read once for the whole batch: each task issued from them
      // reserves its invocation there too, or a fan-out would pass the plan and the pending cap.
      for (const c of candidates) if (c.next.accountId === parent.accountId) c.pending++;
      const byStream = trigger.includeResult && handOver && "byStream" in handOver ? handOver : null;
      const input: TaskInput = !trigger.includeResult || !handOver ? NO_BODY : "byStream" in handOver ? { ...NO_BODY, headers: { "content-type": handOver.contentType } } : handOver;
      const o: NewTask = { id, accountId: parent.accountId, input, triggerId: trigger.id, parentTaskId: parent.id, hop: parent.hop + 1, chainId: parent.chainId ?? parent.id };
      const staged = byStream ? stageHandOver(bucket, parent.resultKey!, byStream, o.accountId, id) : stageInput(bucket, o, now);
      planned.push(staged.then((s) => taskRow(o, s, now, next, buildId)));
    }
  }
  if (!ids.length) return [];
  const rows = await Promise.all(planned);
  const written = await sqlBatch(db, [
    ...byteSlices(rows).filter((slice) => slice.length).map(insertWithinChainLimit),
    sql`select * from ${tasks} where id in (select value from json_each(${JSON.stringify(ids)}))`,
  ]);
  const present = written.at(-1)!.map((raw) => rowOf(tasks, raw));
  const have = new Set(present.map((t) => t.id));
  const cut = rows.filter((r) => !have.has(r.id));
  if (cut.length) await chainLimitReached(db, bucket, cut);
  return present.filter((t) => t.finishedAt == null);
}

/** A D1 value holds about 2 MB: rows (with inputs up to 4 KiB inline, and a handed-over result) go in slices of about 1 MB of JSON. */
const SLICE_BYTES = 1_000_000;

function byteSlices(rows: ChainedRow[]): ChainedRow[][] {
  const out: ChainedRow[][] = [[]];
  let bytes = 0;
  for (const r of rows) {
    const size = JSON.stringify(r).length;
    if (out.at(-1)!.length && bytes + size > SLICE_BYTES) {
      out.push([]);
      bytes = 0;
    }
    out.at(-1)!.push(r);
    bytes += size;
  }
  return out;
}

/**
 * Inserts chained tasks, all in one statement (one JSON parameter, whatever their number), each
 * only while its chain has fewer than MAX_CHAIN_TASKS: the tasks already in D1 plus those before
 * it in this insert. SQLite reads the select in full before inserting (it reads the table it
 * inserts into), so the count is the one before the insert; a D1 statement runs alone, so two
 * shards firing triggers of one chain at once cannot both take its last places. (Slices of one
 * firing are statements of one D1 batch, run in order: each counts what those before it inserted.)
 */
function insertWithinChainLimit(rows: ChainedRow[]): SQL {
  const columns = getTableColumns(tasks);
  const keys = Object.keys(rows[0]!) as (keyof ChainedRow & keyof typeof columns)[];
  const names = sql.join(keys.map((k) => sql.identifier(columns[k].name)), sql`, `);
  const picks = sql.join(keys.map((k) => sql`json_extract(value, ${sql.raw(`'$.${k}'`)}) as ${sql.identifier(columns[k].name)}`), sql`, `);
  return sql`insert into ${tasks} (${names})
    select ${names} from (
      select ${picks}, row_number() over (partition by json_extract(value, '$.chainId') order by key) as nth
      from json_each(${JSON.stringify(rows)})
    ) as j
    where j.nth + (select count(*) from ${tasks} as c where c.chain_id = j.chain_id) <= ${MAX_CHAIN_TASKS}
      and not exists (select 1 from ${tasks} as e where e.id = j.id)`;
}

/** Tasks a chain had no room for: their inputs go, and each parent's log (when in D1) gets a line saying why. */
async function chainLimitReached(db: Db, bucket: R2Bucket, cut: ChainedRow[]) {
  const byParent = new Map<string, ChainedRow[]>();
  for (const r of cut) byParent.set(r.parentTaskId!, [...(byParent.get(r.parentTaskId!) ?? []), r]);
  const notes = [...byParent].map(([id, rows]) => ({
    id,
    line: `[dispatcher] ${rows.length} trigger(s) not fired: the chain of task ${rows[0]!.chainId} reached its limit of ${MAX_CHAIN_TASKS} tasks`,
  }));
  for (const n of notes) console.warn(JSON.stringify({ level: "warn", component: "dispatcher", msg: "chain limit reached", parentTaskId: n.id, line: n.line }));
  const keys = cut.flatMap((r) => (r.inputKey ? [r.inputKey] : []));
  await Promise.all([
    keys.length ? bucket.delete(keys) : undefined,
    sqlBatch(db, [
      sql`update ${tasks} set log = json_insert(tasks.log, '$[#]', o.line)
        from (select json_extract(value, '$.id') as id, json_extract(value, '$.line') as line from json_each(${JSON.stringify(notes)})) as o
        where tasks.id = o.id and tasks.log is not null`,
    ]),
  ]);
}
