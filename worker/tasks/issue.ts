import { and, Column, eq, fillPlaceholders, getTableColumns, is, sql, SQL } from "drizzle-orm";
import type { AnySQLiteColumn } from "drizzle-orm/sqlite-core";
import { rowOf, type Db } from "../db/client.js";
import { functions, tasks } from "../db/schema.js";
import { ApiError } from "../errors.js";
import { periodOf, type Plan } from "../billing/plans.js";
import { admissible, admissionColumns, admitFunction, type AdmissionLimits } from "./admission.js";
import { stageInput, taskRow, type IssueOptions, type NewTask, type StagedInput, type TaskRow } from "./row.js";

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
