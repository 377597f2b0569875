import { createApp } from "./app.js";
import type { Bindings } from "./env.js";

export { Dispatcher } from "./dispatch/durable-object.js";
export { EndpointCounter } from "./counters/durable-object.js";

const app = createApp();

export default {
  fetch: app.fetch,
} satisfies ExportedHandler<Bindings>;
