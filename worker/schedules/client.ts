import type { Bindings } from "../env.js";
import type { Scheduler } from "./durable-object.js";

/**
 * One scheduler object per schedule: its alarm is the schedule's next run, and its storage the
 * minute it last fired, so no two schedules ever contend and a deleted schedule takes its object's
 * state with it.
 */
export const schedulerFor = (env: Bindings, scheduleId: string): DurableObjectStub<Scheduler> =>
  (env.SCHEDULER as unknown as DurableObjectNamespace<Scheduler>).get(env.SCHEDULER.idFromName(scheduleId));
