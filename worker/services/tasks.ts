import { and, Column, desc, eq, fillPlaceholders, getTableColumns, is, lt, sql, SQL } from "drizzle-orm";
import type { AnySQLiteColumn } from "drizzle-orm/sqlite-core";
import { rowOf, type Db } from "../db/client.js";
import { functions, tasks } from "../db/schema.js";
import { ApiError, notFound } from "../errors.js";
import { periodOf, type Plan } from "../billing/plans.js";
import { admissible, admissionColumns, admitFunction, type AdmissionLimits } from "./admission.js";
import { taskInputKey } from "../lib/storage-keys.js";
import { unixSeconds } from "../lib/time.js";
import type { TaskInput } from "../../shared/schemas/task.js";
import type { FunctionRow } from "./functions.js";
import type { TaskBody } from "../http/task-body.js";

export type TaskRow = typeof tasks.$inferSelect;

/** Inputs up to this size stay in the D1 row; larger ones go to R2 (D1 rows stop near 1 MB). */
const INLINE_INPUT_BYTES = 64 * 1024;

/**
 * Headers a function never sees: credentials of the caller, the edge's own, and GC-Storage (only
 * the function's own stored value arrives under that name).
 */
const HIDDEN_HEADERS = /^(authorization|cookie|cf-.*|x-forwarded-.*|x-real-ip|gc-storage)$/i;

/** A query string as a task's `query`: a repeated parameter becomes an array. */
export function queryRecord(params: URLSearchParams): TaskInput["query"] {
  const query: Record<string, string | string[]> = {};
  for (const key of new Set(params.keys())) {
    const all = params.getAll(key);
    query[key] = all.length === 1 ? all[0]! : all;
  }
  return query;
}

export function inputFromRequest(req: Request, body: TaskBody): TaskInput {
  const query = queryRecord(new URL(req.url).searchParams);
  const headers: Record<string, string> = {};
  req.headers.forEach((value, key) => {
    if (!HIDDEN_HEADERS.test(key)) headers[key] = value;
  });
  return { method: req.method, query, headers, ...body };
}

/** A new task, but for the function and build it runs. */
export interface NewTask {
  /** From newTaskId() (dispatch/client.ts), which puts the id on its function's shard. */
  id: string;
  accountId: string;
  input: TaskInput;
  endpointId?: string;
  triggerId?: string;
  parentTaskId?: string;
  hop?: number;
  chainId?: string;
  /** The schedule that issued the task (worker/schedules/). */
  scheduledId?: string;
}

export interface IssueOptions extends NewTask {
  fn: FunctionRow;
  /** The build to run, from admitFunction() or the endpoint's admission columns. */
  buildId: string;
}

/** A new task's id and its input: inline when small, else already put in R2 under `inputKey`. */
export interface StagedInput {
  id: string;
  input: string | null;
  inputKey: string | null;
}

export async function stageInput(bucket: R2Bucket, o: NewTask, now: number): Promise<StagedInput> {
  const id = o.id;
  const json = JSON.stringify(o.input);
  if (json.length <= INLINE_INPUT_BYTES) return { id, input: json, inputKey: null };
  const inputKey = taskInputKey(o.accountId, id);
  await bucket.put(inputKey, json);
  return { id, input: null, inputKey };
}

/** What a task copies from its function when issued: values, or `V` (SQL or columns) for each. */
type FunctionFields<V> = { [K in keyof TaskFunction]: TaskFunction[K] | V };
type TaskFunction = Pick<FunctionRow, "id" | "lang" | "timeout" | "cpuCount" | "memSize" | "privileged" | "egress">;

/**
 * A new task's row: the one list of what a task is issued with. `fn` and `buildId` are values for a
 * plain insert (issueTask, `V` never), or the function table's columns and a subquery for the
 * insert-select that reads them in the same statement (issueFunctionTask, `V` SQL or a column).
 */
export function taskRow<V = never>(o: NewTask, staged: StagedInput, now: number, fn: FunctionFields<NoInfer<V>>, buildId: string | NoInfer<V>) {
  return {
    id: staged.id,
    accountId: o.accountId,
    functionId: fn.id,
    lang: fn.lang,
    buildId,
    endpointId: o.endpointId ?? null,
    triggerId: o.triggerId ?? null,
    parentTaskId: o.parentTaskId ?? null,
    chainId: o.chainId ?? null,
    scheduledId: o.scheduledId ?? null,
    hop: o.hop ?? 0,
    issuedAt: now,
    timeout: fn.timeout,
    cpuCount: fn.cpuCount,
    memSize: fn.memSize,
    privileged: fn.privileged,
    egress: fn.egress,
    input: staged.input,
    inputKey: staged.inputKey,
  };
}

/** Records a pending task of an admitted function (see services/admission.ts). */
export async function issueTask(db: Db, bucket: R2Bucket, o: IssueOptions, now = Date.now()): Promise<TaskRow> {
  const staged = await stageInput(bucket, o, now);
  const [row] = await db.insert(tasks).values(taskRow(o, staged, now, o.fn, o.buildId)).returning();
  return row!;
}

type TaskColumns = typeof tasks._.columns;

/**
 * The select list of an insert-select into `tasks`, which must name every column in table order
 * (drizzle checks both): the row's value where it has one, bound (encoded as the column encodes
 * it) unless it is already SQL or a column, else the column's default (tasks has no default
 * functions), else NULL.
 */
function everyTaskColumn(row: { [K in keyof TaskColumns]?: unknown }): { [K in keyof TaskColumns]: SQL | AnySQLiteColumn } {
  const fields = Object.entries(getTableColumns(tasks)).map(([key, col]) => {
    const value = key in row ? row[key as keyof TaskColumns] : col.default;
    return [key, is(value, SQL) || is(value, Column) ? value : sql`${sql.param(value ?? null, col)}`];
  });
  return Object.fromEntries(fields) as { [K in keyof TaskColumns]: SQL | AnySQLiteColumn };
}

const issueStatements = new WeakMap<Plan[], { sql: string; params: unknown[] }>();

/**
 * The insert-select of issueFunctionTask(), built once per plan configuration with placeholders
 * for what varies per task: building it walks every column and subquery, a cost per request
 * otherwise. (Trigger and parent are those of a task created through the API, an endpoint or a
 * schedule: none.)
 */
function issueStatement(db: Db, plans: Plan[]): { sql: string; params: unknown[] } {
  let statement = issueStatements.get(plans);
  if (statement) return statement;
  const p = <T>(name: string) => sql.placeholder(name) as unknown as T;
  const period = p<string>("period");
  const o: NewTask = { id: p("id"), accountId: p("accountId"), input: p("input"), endpointId: p("endpointId"), scheduledId: p("scheduledId") };
  const staged: StagedInput = { id: p("id"), input: p("input"), inputKey: p("inputKey") };
  statement = db
    .insert(tasks)
    .select((qb) =>
      qb
        .select(everyTaskColumn(taskRow<SQL | AnySQLiteColumn>(o, staged, p("now"), functions, admissionColumns(period).buildId)))
        .from(functions)
        .where(and(eq(functions.id, p("functionId")), eq(functions.accountId, p("accountId")), admissible(plans, period, p("maxPending")))),
    )
    .returning()
    .toSQL();
  issueStatements.set(plans, statement);
  return statement;
}

/**
 * Issues a task of one of the caller's functions (through the API, or an endpoint of it) in one D1
 * round trip: an insert-select from the function's row that inserts nothing unless the function is
 * the caller's and admissible() (it has a SUCCESS build, the newest of which it runs, and its
 * account has invocations left that unfinished tasks have not reserved, and fewer unfinished tasks
 * than the cap). Being one statement, concurrent issues cannot together overshoot either limit.
 * Only when nothing was inserted does admitFunction() run, to answer why with the usual 404, 409,
 * 402 or 429; if it admits the function after all (its builds or usage changed in between), the insert
 * is tried once more, and a second miss answers 409 conflict. An input put in R2 for a task that
 * was not issued is deleted again.
 */
export async function issueFunctionTask(db: Db, bucket: R2Bucket, limits: AdmissionLimits, functionId: string, o: NewTask, now = Date.now()): Promise<TaskRow> {
  const staged = await stageInput(bucket, o, now);
  const statement = issueStatement(db, limits.plans);
  const values = {
    id: staged.id, accountId: o.accountId, functionId, endpointId: o.endpointId ?? null, scheduledId: o.scheduledId ?? null, now, period: periodOf(now),
    maxPending: limits.maxPending, input: staged.input, inputKey: staged.inputKey,
  };
  const insert = async () => {
    const { results } = await db.$client.prepare(statement.sql).bind(...fillPlaceholders(statement.params, values)).all<Record<string, unknown>>();
    return results[0] ? rowOf(tasks, results[0]) : undefined;
  };
  try {
    const row = await insert();
    if (row) return row;
    await admitFunction(db, limits, o.accountId, functionId, now);
    const retried = await insert();
    if (retried) return retried;
    throw new ApiError("conflict", "the function's builds or the account's usage changed while the task was being issued; try again");
  } catch (err) {
    if (staged.inputKey) await bucket.delete(staged.inputKey);
    throw err;
  }
}

export async function getOwnTask(db: Db, accountId: string, id: string): Promise<TaskRow> {
  const [row] = await db.select().from(tasks).where(and(eq(tasks.id, id), eq(tasks.accountId, accountId)));
  if (!row) throw notFound("task");
  return row;
}

export const describeTask = (t: TaskRow) => ({
  id: t.id,
  functionId: t.functionId,
  /** The build it ran or will run, chosen by the function's release when it was issued. */
  buildId: t.buildId,
  issued: unixSeconds(t.issuedAt),
  assigned: unixSeconds(t.assignedAt),
  finished: unixSeconds(t.finishedAt),
  progress: t.progress,
  status: t.status,
  node: t.node,
  timeout: t.timeout,
  capabilities: { cpuCount: t.cpuCount, memSize: t.memSize, networkLatency: t.networkLatency, privileged: t.privileged },
  endpointId: t.endpointId,
  triggerId: t.triggerId,
  parentTaskId: t.parentTaskId,
  /** The container runtime it ran under (runsc: gVisor), null until it ran. */
  runtime: t.runtime,
  scheduledId: t.scheduledId,
  /**
   * The headers the function answered with (GC-Storage taken off), which the result operation does
   * not replay (it sends only the Content-Type); null until it finished, and once retention deleted the result.
   */
  responseHeaders: t.resultHeaders ?? null,
  /** Attempts run so far (worker/retries/): result and status are the last one's. */
  attempts: t.attempts,
});

/**
 * A task-list filter names a function as every other list filter does: one that is not the
 * caller's answers 404. Finished tasks outlive their function, so a deleted function whose tasks
 * remain still filters.
 */
async function assertTaskFunction(db: Db, accountId: string, functionId: string): Promise<void> {
  const [fn] = await db.select({ id: functions.id }).from(functions).where(and(eq(functions.id, functionId), eq(functions.accountId, accountId))).limit(1);
  if (fn) return;
  const [task] = await db.select({ id: tasks.id }).from(tasks).where(and(eq(tasks.accountId, accountId), eq(tasks.functionId, functionId))).limit(1);
  if (!task) throw notFound("function");
}

export async function listTasks(db: Db, accountId: string, q: { functionId?: string | undefined; before?: string | undefined; limit: number }) {
  if (q.functionId) await assertTaskFunction(db, accountId, q.functionId);
  const rows = await db
    .select({ id: tasks.id, issuedAt: tasks.issuedAt, progress: tasks.progress, status: tasks.status })
    .from(tasks)
    .where(
      and(
        eq(tasks.accountId, accountId),
        q.functionId ? eq(tasks.functionId, q.functionId) : undefined,
        q.before ? lt(tasks.id, q.before) : undefined,
      ),
    )
    .orderBy(desc(tasks.id))
    .limit(q.limit);
  return rows.map((r) => ({ id: r.id, issued: unixSeconds(r.issuedAt), progress: r.progress, status: r.status }));
}
