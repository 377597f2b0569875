import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { describe, expect, it } from "vitest";
import { ROOT } from "./harness.js";

const run = promisify(execFile);

describe("the start command's npm install", () => {
  it("has every dependency's install script reviewed, so npm prints no install-scripts warning", async () => {
    // The same check npm makes after installing; an unreviewed package is what printed
    // "N packages have install scripts not yet covered by allowScripts" on every install.
    const { stdout, stderr } = await run("npm", ["install-scripts", "ls"], { cwd: ROOT });
    expect(`${stdout}${stderr}`).toContain("No packages with unreviewed install scripts");
    expect(`${stdout}${stderr}`).not.toContain("not yet covered by allowScripts");
  });
});
