import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ROOT } from "../e2e/harness.js";
import { pathWithoutGcfaas, runCli, show } from "./run-cli.js";

const run = promisify(execFile);

// `npm install -g` from the repository, into a prefix of the test's own, offline: the installed
// `gcfaas` runs from any folder, and its hints name `gcfaas` (on the PATH) instead of `npx gcfaas`.
let prefix: string;
let elsewhere: string;

beforeAll(async () => {
  prefix = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-prefix-"));
  elsewhere = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-elsewhere-"));
  await run("npm", ["install", "-g", "--prefix", prefix, "--offline", "--no-audit", "--no-fund", ROOT], { cwd: elsewhere, env: { ...process.env, npm_config_update_notifier: "false" } });
}, 120_000);

afterAll(async () => {
  if (prefix) await fs.rm(prefix, { recursive: true, force: true });
  if (elsewhere) await fs.rm(elsewhere, { recursive: true, force: true });
});

describe("npm install -g", () => {
  it("puts a gcfaas on the PATH that runs from any folder and names itself gcfaas in its hints", async () => {
    const bin = path.join(prefix, "bin");
    // node itself last: its folder may hold a gcfaas of a global install, which bin/ comes before.
    const env = { PATH: [bin, pathWithoutGcfaas(), path.dirname(process.execPath)].join(path.delimiter), HOME: elsewhere };
    const { stdout } = await run("gcfaas", ["--version"], { cwd: elsewhere, env });
    expect(stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
    const init = await run("gcfaas", ["init", "hello-py", "--lang", "py"], { cwd: elsewhere, env });
    expect(init.stdout).toContain("next: gcfaas deploy hello-py");
    await fs.access(path.join(elsewhere, "hello-py", "handler.py"));
    const help = await run("gcfaas", ["--help"], { cwd: elsewhere, env });
    expect(help.stdout).toContain("Start with: gcfaas login");
    expect(help.stdout).not.toContain("npx gcfaas");
  });

  it("without gcfaas on the PATH, hints say npx gcfaas", async () => {
    const r = await runCli(["init", "other", "--lang", "py"], { cwd: elsewhere });
    expect(r.code, show(r)).toBe(0);
    expect(r.stdout).toContain("next: npx gcfaas deploy other");
    const help = await runCli(["--help"], { cwd: elsewhere });
    expect(help.stdout).toContain("Start with: npx gcfaas login");
    expect(help.stdout).toContain("`npm install -g .` in the repository puts gcfaas there");
  });
});
