import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { ROOT } from "./harness.js";

/**
 * migrations/ is generated from the drizzle schema (worker/db/schema/) by drizzle-kit: a table
 * edited without `npm run db:generate` would deploy code whose D1 lacks what it reads.
 */
describe("migrations/", () => {
  it("holds everything the drizzle schema declares: drizzle-kit has nothing left to generate", async () => {
    const out = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-migrations-"));
    try {
      await fs.cp(path.join(ROOT, "migrations"), out, { recursive: true });
      const config = path.join(out, "drizzle.config.cjs");
      // drizzle-kit reads `out` and `schema` relative to its working directory only.
      await fs.writeFile(config, `module.exports = ${JSON.stringify({ dialect: "sqlite", schema: "./worker/db/schema.ts", out: path.relative(ROOT, out) })};`);
      const before = await fs.readdir(out);
      const { stdout } = await promisify(execFile)(path.join(ROOT, "node_modules/.bin/drizzle-kit"), ["generate", "--config", config], { cwd: ROOT });
      // It exits 0 even when it fails to read the folder: what it printed is the answer.
      expect(stdout).toContain("No schema changes");
      expect(await fs.readdir(out)).toEqual(before);
    } finally {
      await fs.rm(out, { recursive: true, force: true });
    }
  });
});
