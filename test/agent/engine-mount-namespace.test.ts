import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { engineMountNamespace } from "../support/engine-namespace.js";
import { removeTempDirs, tempDir } from "./helpers/functions.js";

const run = promisify(execFile);
const HELPER = path.join(import.meta.dirname, "helpers/agent-in-namespace.ts");

/** Runs a step of the agent's builder in a fresh mount namespace (as the sandboxed unit's agent), with `engineNs` or without. */
async function inOwnNamespace<T>(step: string, dir: string, engineNs?: string): Promise<T> {
  const argv = ["--mount", "--propagation", "private", process.execPath, "--import", "tsx", HELPER, step, dir, ...(engineNs ? [engineNs] : [])];
  return JSON.parse((await run("unshare", argv, { maxBuffer: 16 * 1024 * 1024 })).stdout) as T;
}

async function buildInOwnNamespace(engineNs?: string) {
  const workDir = path.join(await tempDir("own-ns"), "work");
  const built = await inOwnNamespace<{ result: { ok: boolean; reason?: string; artifactPath?: string }; log: string[] }>("build", workDir, engineNs);
  return { ...built, workDir };
}

async function mountsUnder(dir: string): Promise<string[]> {
  const table = await fs.readFile("/proc/self/mounts", "utf8");
  return table.split("\n").map((l) => l.split(" ")[1] ?? "").filter((p) => p.startsWith(dir));
}

beforeAll(async () => {
  await ensureOfflineImages(["py"]);
}, 900_000);

afterAll(removeTempDirs);

// This test process shares the Docker Engine's mount namespace; each build runs in one of its own.
describe("a build by an agent in a mount namespace other than the Docker Engine's", () => {
  it("with --engine-mount-ns, mounts its space where the engine binds it from: the build sees its source, and nothing stays mounted", async () => {
    const built = await buildInOwnNamespace(await engineMountNamespace());
    expect(built.result.ok, built.log.join("\n")).toBe(true);
    const { stdout } = await run("tar", ["--list", "--file", built.result.artifactPath!]);
    expect(stdout.split("\n")).toEqual(expect.arrayContaining([expect.stringMatching(/(^|\/)handler\.py$/), expect.stringMatching(/(^|\/)helper\.py$/)]));
    expect(await mountsUnder(built.workDir)).toEqual([]);
    const { stdout: loops } = await run("losetup", ["--list", "--noheadings", "--output", "BACK-FILE"]);
    expect(loops).not.toContain(built.workDir);
  }, 300_000);

  it("without it, the engine binds the empty folder beneath the agent's mount: the build does not get the source", async () => {
    const built = await buildInOwnNamespace();
    const artifact = built.result.ok ? (await run("tar", ["--list", "--file", built.result.artifactPath!])).stdout : "";
    expect(artifact, built.log.join("\n")).not.toMatch(/handler\.py/);
  }, 300_000);

  it("with --engine-mount-ns, unmounts from the engine's namespace the space an agent killed mid-build left", async () => {
    const engineNs = await engineMountNamespace();
    const work = path.join(await tempDir("own-ns-leftover"), "work");
    const folder = path.join(work, "build-b1", "build");
    await fs.mkdir(folder, { recursive: true });
    // The agent's namespace dies with it; the engine's mount stays.
    const { root } = await inOwnNamespace<{ root: string }>("leave-space", folder, engineNs);
    expect(await mountsUnder(work)).toEqual([root]);
    expect(await inOwnNamespace("remove-leftovers", work, engineNs)).toEqual({ removed: 1 });
    expect(await mountsUnder(work)).toEqual([]);
  }, 300_000);
});
