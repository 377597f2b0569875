import type { D1Migration } from "cloudflare:test";
import type { Bindings } from "../../worker/env.js";

declare global {
  namespace Cloudflare {
    interface Env extends Bindings {
      TEST_MIGRATIONS: D1Migration[];
      ADMIN_TOKEN: string;
      /** Empty until a migration test applies migrations to it (vitest.config.ts). */
      MIGRATION_DB: D1Database;
    }
  }
}
