import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "./harness.js";

/** Runs start.sh's and test.sh's install step in `dir`, with an `npm` that only records its calls and makes the marker. */
function ensure(dir: string) {
  const script = `. ${JSON.stringify(path.join(ROOT, "scripts/lib/ensure-packages.sh"))}
npm() { echo "npm $*" >> calls; mkdir -p node_modules/wrangler; }
ensure_packages node_modules/wrangler --loglevel=error`;
  const r = spawnSync("bash", ["-c", script], { cwd: dir, encoding: "utf8" });
  let calls = "";
  try {
    calls = readFileSync(path.join(dir, "calls"), "utf8");
  } catch {}
  return { status: r.status, stderr: r.stderr, calls: calls.trim().split("\n").filter(Boolean) };
}

const checkout = () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "gcfaas-packages-"));
  writeFileSync(path.join(dir, "package-lock.json"), '{"lockfileVersion":3}');
  return dir;
};

describe("ensure_packages (the install step of scripts/start.sh and scripts/test.sh)", () => {
  it("installs once, and not again for a lock file that is newer but the same", () => {
    const dir = checkout();
    expect(ensure(dir)).toMatchObject({ status: 0, calls: ["npm ci --no-audit --no-fund --loglevel=error"] });
    // A fresh checkout's lock file is newer than any install: its content is what counts.
    const later = new Date(Date.now() + 60_000);
    utimesSync(path.join(dir, "package-lock.json"), later, later);
    expect(ensure(dir).calls).toHaveLength(1);
    writeFileSync(path.join(dir, "package-lock.json"), '{"lockfileVersion":3,"changed":true}');
    expect(ensure(dir).calls).toHaveLength(2);
  });

  it("never installs through a node_modules that links to another tree", () => {
    const dir = checkout();
    const other = mkdtempSync(path.join(os.tmpdir(), "gcfaas-packages-other-"));
    mkdirSync(path.join(other, "wrangler"));
    symlinkSync(other, path.join(dir, "node_modules"));
    const r = ensure(dir);
    expect(r.status).toBe(1);
    expect(r.calls).toEqual([]);
    expect(r.stderr).toMatch(/node_modules is a link[\s\S]*npm ci through it would empty that tree/);
  });
});
