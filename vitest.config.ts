import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";
import { buildAssets } from "./scripts/build-assets.js";

// Two projects: the Worker runs inside workerd (real D1, R2 and Durable Objects from
// miniflare), the agent and end-to-end suites run in Node against a real Docker Engine.
export default defineConfig(async () => {
  // wrangler.toml's [assets] folder must exist before workerd starts; wrangler's [build] makes it
  // for deploy and dev, this for the Worker tests.
  buildAssets();
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
  return {
    test: {
      projects: [
        {
          plugins: [
            cloudflareTest({
              wrangler: { configPath: "./wrangler.toml" },
              miniflare: {
                // A second, empty database: migration tests apply the migrations to it step by step.
                d1Databases: { MIGRATION_DB: "migration-db" },
                bindings: {
                  TEST_MIGRATIONS: migrations,
                  ADMIN_TOKEN: "test-admin-token",
                  // Function secrets are sealed under it (worker/function-config/secret-box.ts).
                  SECRETS_KEY: "test-secrets-key-0123456789abcdef",
                  BILLING_WEBHOOK_SECRET: "whsec_test",
                  // The layout before step 4 (docs/dispatch.md): most of these tests edit and read
                  // D1's rows of tasks; rowless-tasks.test.ts switches its shard to "shard", the
                  // layout wrangler.toml deploys (and the e2e and CLI suites run).
                  TASK_ROWS: "d1",
                  PLANS: JSON.stringify([
                    { id: "DEVELOPER", description: "DEVELOPER (100000 invocations)", price: 10, currency: "usd", invocations: 100000 },
                    { id: "TINY", description: "TINY (2 invocations)", price: 1.5, currency: "usd", invocations: 2 },
                  ]),
                },
              },
            }),
          ],
          test: {
            name: "worker",
            include: ["test/worker/**/*.test.ts"],
            // Table-driven suites send hundreds of requests; a loaded 2-core CI box needs room, and
            // files one at a time keep the dispatcher's timing tests honest (no slower in total).
            testTimeout: 60_000,
            fileParallelism: false,
            setupFiles: ["test/worker/setup/apply-migrations.ts"],
          },
        },
        {
          test: {
            name: "agent",
            environment: "node",
            include: ["test/agent/**/*.test.ts"],
            testTimeout: 300_000,
            hookTimeout: 900_000,
            fileParallelism: false,
          },
        },
        {
          test: {
            name: "cli",
            environment: "node",
            include: ["test/cli/**/*.test.ts"],
            testTimeout: 300_000,
            hookTimeout: 900_000,
            fileParallelism: false,
          },
        },
        {
          test: {
            name: "e2e",
            environment: "node",
            include: ["test/e2e/**/*.test.ts"],
            testTimeout: 600_000,
            hookTimeout: 1_800_000,
            fileParallelism: false,
          },
        },
      ],
    },
  };
});
