import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-pool-workers";
import { defineConfig } from "vitest/config";

// Two projects: the Worker runs inside workerd (real D1, R2 and Durable Objects from
// miniflare), the agent and end-to-end suites run in Node against a real Docker Engine.
export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
  return {
    test: {
      projects: [
        {
          plugins: [
            cloudflareTest({
              wrangler: { configPath: "./wrangler.toml" },
              miniflare: {
                bindings: { TEST_MIGRATIONS: migrations, ADMIN_TOKEN: "test-admin-token" },
              },
            }),
          ],
          test: {
            name: "worker",
            include: ["test/worker/**/*.test.ts"],
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
