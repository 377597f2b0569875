import { createApp } from "./app.js";
import type { Bindings } from "./env.js";
import { openDb } from "./db/client.js";
import { plansFrom } from "./billing/plans.js";
import { renewPlans } from "./billing/renewal.js";
import { sweepTasks } from "./services/retention.js";
import { retentionMs } from "./tasks/retention-period.js";
import { pruneUsage, usageDedupMs } from "./services/usage-pruning.js";
import { sweepOrphans } from "./services/orphans.js";
import { archiveTasks } from "./task-history/archiver.js";
import { purgeArchive } from "./task-history/retention.js";
import { archiveAfterMs } from "./task-history/window.js";
import { RENEWAL_CRON } from "./crons.js";
import { withCostCounting } from "./diagnostics/cost-counters.js";
import { withD1Control } from "./diagnostics/d1-control.js";
import { Dispatcher } from "./dispatch/durable-object.js";
import { sweepUnreachable } from "./dispatch/client.js";

export { Dispatcher };
export { EndpointCounter } from "./counters/durable-object.js";
export { SyncWaitLeases } from "./counters/sync-waits.js";
export { Scheduler } from "./schedules/durable-object.js";


const app = createApp();

const logged = (msg: string, cron: string) => (n: number) => console.log(JSON.stringify({ level: "info", msg, n, cron }));

export default {
  fetch: withD1Control(withCostCounting(app.fetch, Dispatcher)),
  async scheduled(controller, env, ctx) {
    const db = openDb(env);
    const now = controller.scheduledTime;
    if (controller.cron === RENEWAL_CRON) ctx.waitUntil(renewPlans(db, plansFrom(env.PLANS), now).then(logged("plans renewed", controller.cron)));
    else {
      // One after another: the archive takes rows as retention left them, and retention of the
      // archive sees what the archive just took.
      ctx.waitUntil(
        sweepTasks(db, env.BUCKET, retentionMs(env), now)
          .then(logged("finished tasks purged", controller.cron))
          .then(() => archiveTasks(db, env.BUCKET, archiveAfterMs(env), now))
          .then(logged("task records archived", controller.cron))
          .then(() => purgeArchive(db, env.BUCKET, retentionMs(env), now))
          .then(logged("archived tasks purged", controller.cron)),
      );
      ctx.waitUntil(pruneUsage(db, usageDedupMs(env), now).then(logged("usage rows past the dedup horizon deleted", controller.cron)));
      ctx.waitUntil(sweepOrphans(db, env, now).then(logged("tasks never queued failed", controller.cron)));
      ctx.waitUntil(sweepUnreachable(env).then(logged("waiting tasks no node could take failed", controller.cron)));
    }
  },
} satisfies ExportedHandler<Bindings>;
