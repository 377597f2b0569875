import { createApp } from "./app.js";
import type { Bindings } from "./env.js";
import { openDb } from "./db/client.js";
import { plansFrom } from "./billing/plans.js";
import { renewPlans } from "./billing/renewal.js";

export { Dispatcher } from "./dispatch/durable-object.js";
export { EndpointCounter } from "./counters/durable-object.js";

const app = createApp();

export default {
  fetch: app.fetch,
  /** The monthly Cron Trigger: plans renew into invoices. */
  async scheduled(controller, env, ctx) {
    ctx.waitUntil(
      renewPlans(openDb(env.DB), plansFrom(env.PLANS), controller.scheduledTime).then((n) =>
        console.log(JSON.stringify({ level: "info", msg: "plans renewed", invoices: n, cron: controller.cron })),
      ),
    );
  },
} satisfies ExportedHandler<Bindings>;
