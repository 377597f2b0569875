import { createApp } from "./app.js";
import type { Bindings } from "./env.js";
import { openDb } from "./db/client.js";
import { plansFrom } from "./billing/plans.js";
import { renewPlans } from "./billing/renewal.js";
import { ARCHIVE_CRONS, RENEWAL_CRON } from "./crons.js";
import { archiveSweep } from "./sweep/archive-sweep.js";
import { hourlySweep } from "./sweep/hourly.js";
import { withCostCounting } from "./diagnostics/cost-counters.js";
import { withD1Control } from "./diagnostics/d1-control.js";
import { Dispatcher } from "./dispatch/durable-object.js";

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
    else if ((ARCHIVE_CRONS as readonly string[]).includes(controller.cron)) ctx.waitUntil(archiveSweep(db, env, now, (msg, n) => logged(msg, controller.cron)(n)));
    else ctx.waitUntil(hourlySweep(db, env, now, (msg, n) => logged(msg, controller.cron)(n)));
  },
} satisfies ExportedHandler<Bindings>;
