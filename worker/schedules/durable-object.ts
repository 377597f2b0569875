import { DurableObject } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import type { Bindings } from "../env.js";
import { openDb } from "../db/client.js";
import { schedules } from "../db/schema.js";
import { ApiError } from "../errors.js";
import { nextRun, parseCron } from "../../shared/time/cron.js";
import { issueScheduledTask, type ScheduleRow } from "./issue.js";
import { isStorageUnavailable } from "../db/unavailable.js";
import { newTaskId } from "../dispatch/client.js";
import type { Db } from "../db/client.js";

const RETRY_MS = 60_000;
/** A due run that D1 did not take is tried again this soon (with the same task id). */
const RUN_RETRY_MS = 5_000;

interface State {
  scheduleId: string;
  /** Every matching minute up to this instant (ms) has fired or was passed over; the next is after it. */
  watermark: number;
}

/**
 * One schedule's timer (see client.ts). D1's schedule row is the truth: each alarm reads it, so an
 * edit, a pause (active false) or a delete of the schedule or its function takes effect at the next
 * run even if this object was never told. Alarms are delivered at least once; the watermark moves
 * past the due minute before the task is issued, in this object's own storage (committed before
 * any outgoing request leaves), so a repeated alarm finds nothing due: at most one task a minute.
 */
export class Scheduler extends DurableObject<Bindings> {
  /** The clock: tests set it (runInDurableObject) instead of waiting for minutes to pass. */
  now: () => number = () => Date.now();

  constructor(ctx: DurableObjectState, env: Bindings) {
    super(ctx, env);
    ctx.storage.sql.exec("create table if not exists state (schedule_id text primary key, watermark integer not null)");
    // A due run whose task D1 did not take (unreachable): its task id and time, until issued.
    ctx.storage.sql.exec("create table if not exists pending_run (task_id text primary key, at integer not null)");
  }

  private pendingRun(): { taskId: string; at: number } | undefined {
    const row = this.ctx.storage.sql.exec<{ task_id: string; at: number }>("select task_id, at from pending_run").toArray()[0];
    return row && { taskId: row.task_id, at: row.at };
  }

  /**
   * Issues the run; when D1 cannot be reached, keeps it (task id and time) and tries again in a few
   * seconds, so an outage delays a run instead of skipping it, and the same id keeps a run whose
   * insert landed unseen from being issued twice. Answers whether the run is still pending.
   */
  private async issue(db: Db, s: ScheduleRow, at: number, taskId: string): Promise<boolean> {
    try {
      const task = await issueScheduledTask(this.env, db, s, at, taskId);
      console.log(JSON.stringify({ level: "info", msg: "scheduled task issued", scheduleId: s.id, taskId: task.id, at }));
    } catch (err) {
      if (isStorageUnavailable(err)) {
        console.warn(JSON.stringify({ level: "warn", msg: "scheduled run not taken by D1; retrying", scheduleId: s.id, taskId, error: String(err) }));
        this.ctx.storage.sql.exec("insert or replace into pending_run (task_id, at) values (?, ?)", taskId, at);
        await this.ctx.storage.setAlarm(this.now() + RUN_RETRY_MS);
        return true;
      }
      // A refusal (quota, pending cap, no successful build) skips this run, as it would refuse a
      // call through the API; retrying would only get the same answer.
      const reason = err instanceof ApiError ? err.body().error : String(err);
      console.warn(JSON.stringify({ level: "warn", msg: "scheduled run not issued", scheduleId: s.id, at, reason }));
    }
    this.ctx.storage.sql.exec("delete from pending_run");
    return false;
  }

  private state(): State | undefined {
    const row = this.ctx.storage.sql.exec<{ schedule_id: string; watermark: number }>("select schedule_id, watermark from state").toArray()[0];
    return row && { scheduleId: row.schedule_id, watermark: row.watermark };
  }

  private setWatermark(scheduleId: string, watermark: number): void {
    this.ctx.storage.sql.exec(
      "insert into state (schedule_id, watermark) values (?, ?) on conflict(schedule_id) do update set watermark = max(watermark, excluded.watermark)",
      scheduleId,
      watermark,
    );
  }

  /**
   * (Re)starts timing after a create or an edit: runs are counted from now on (an edit does not
   * replay minutes that passed under the old expression). Answers the next run, or null.
   */
  async arm(s: { id: string; active: boolean; cron: string; timezone: string }): Promise<number | null> {
    this.setWatermark(s.id, this.now());
    const next = s.active ? nextRun(parseCron(s.cron), s.timezone, this.state()!.watermark) : null;
    if (next === null) await this.ctx.storage.deleteAlarm();
    else await this.ctx.storage.setAlarm(next);
    return next;
  }

  /** The schedule is gone: forget it (the table stays, for this instance's next call). */
  async stop(): Promise<void> {
    await this.ctx.storage.deleteAlarm();
    this.ctx.storage.sql.exec("delete from state");
    this.ctx.storage.sql.exec("delete from pending_run");
  }

  override async alarm(): Promise<void> {
    const known = this.state();
    if (!known) return;
    const db = openDb(this.env);
    let s: typeof schedules.$inferSelect | undefined;
    try {
      [s] = await db.select().from(schedules).where(eq(schedules.id, known.scheduleId));
    } catch (err) {
      // The runtime retries a failed alarm only a few times, then drops it, and the schedule would
      // never run again: keep trying every minute instead. The watermark has not moved, so the run
      // that was due fires (once) when D1 answers again.
      console.warn(JSON.stringify({ level: "warn", msg: "schedule unreadable; retrying in a minute", scheduleId: known.scheduleId, error: String(err) }));
      return this.ctx.storage.setAlarm(this.now() + RETRY_MS);
    }
    if (!s) return this.stop();
    const pending = this.pendingRun();
    if (pending && !s.active) this.ctx.storage.sql.exec("delete from pending_run");
    else if (pending && (await this.issue(db, s, pending.at, pending.taskId))) return;
    if (!s.active) return;
    // Read again after the await: an arm() or a stop() may have run meanwhile. From here to the
    // write, nothing yields.
    const current = this.state();
    if (!current) return;
    const { watermark } = current;
    const now = this.now();
    const cron = parseCron(s.cron);
    const due = nextRun(cron, s.timezone, watermark);
    if (due === null) return;
    if (due > now) return this.ctx.storage.setAlarm(due);
    // Every due minute up to now collapses into this one run: a stretch missed while the service
    // was down fires once, not once a minute.
    this.setWatermark(s.id, now);
    const next = nextRun(cron, s.timezone, now);
    if (next !== null) await this.ctx.storage.setAlarm(next);
    await this.issue(db, s, now, newTaskId(this.env, s.functionId, now));
  }
}
