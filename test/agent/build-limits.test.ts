import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BuildSpace, removeLeftoverBuildSpaces } from "../../agent/builder/build-space.js";
import { ensureEnvironment } from "./helpers/environment.js";
import { buildContainersLeft, buildFiles, removeTempDirs, tempDir } from "./helpers/functions.js";

const HANDLER = { name: "handler.js", data: "module.exports = async () => 'ok';\n" };

/** A package.json whose preinstall script (run by the build step in /out) is `script`. */
const preinstall = (script: string) => ({ name: "package.json", data: JSON.stringify({ name: "fill", version: "1.0.0", scripts: { preinstall: script } }) });

/** Mount points under `dir`: a build space still mounted would show here. */
async function mountsUnder(dir: string): Promise<string[]> {
  return (await fs.readFile("/proc/self/mounts", "utf8")).split("\n").map((l) => l.split(" ")[1] ?? "").filter((p) => p.startsWith(dir));
}

afterAll(async () => {
  await removeTempDirs();
});

beforeAll(async () => {
  await ensureEnvironment(["js"]);
});

describe("build space", () => {
  it.each(["/tmp", "/scratch", "/out"])("fails a build that writes more than its space into %s, says so, and leaves nothing on the host", async (place) => {
    const built = await buildFiles("js", [HANDLER, preinstall(`echo filling ${place} && head -c 200000000 /dev/zero > ${place}/fill`)], { diskMiB: 64 });
    expect(built.result.ok).toBe(false);
    expect(built.log).toContain(`filling ${place}`);
    expect(built.log.at(-1)).toBe("[build] failed: build ran out of space: source, output, caches and /tmp may hold at most 64 MiB together");
    // The 64 MiB the build did write went with its space: no image file, no mount, no folder.
    expect(await fs.readdir(built.workDir)).toEqual([]);
    expect(await mountsUnder(built.workDir)).toEqual([]);
    expect(await buildContainersLeft()).toBe(0);
  });

  it("refuses a zip that unpacks to more than the space", async () => {
    const built = await buildFiles("js", [HANDLER, { name: "big.bin", data: Buffer.alloc(80 * 1024 * 1024) }], { diskMiB: 64 });
    expect(built.result.ok).toBe(false);
    expect(built.log.at(-1)).toBe("[build] failed: zip refused: zip unpacks to more than 64 MiB, the limit; refusing a possible zip bomb");
    expect(await fs.readdir(built.workDir)).toEqual([]);
  });

  it("builds a function within its limits and keeps only the artifact", async () => {
    const built = await buildFiles("js", [HANDLER, preinstall("head -c 1000000 /dev/urandom > data.bin")], { diskMiB: 64, maxArtifactMiB: 2 });
    expect(built.result.ok, built.log.join("\n")).toBe(true);
    expect(built.log.some((l) => l.includes("disk 64 MiB"))).toBe(true);
    expect(await fs.readdir(built.workDir)).toEqual(["artifact.tar"]);
    expect(await mountsUnder(built.workDir)).toEqual([]);
  });

  it("is unmounted when the next agent starts, should an agent be killed in the middle of a build", async () => {
    const work = path.join(await tempDir("leftover"), "work");
    const folder = path.join(work, "build-b1", "build");
    await fs.mkdir(folder, { recursive: true });
    await BuildSpace.create(folder, 64, 10001);
    expect(await mountsUnder(work)).toHaveLength(1);
    expect(await removeLeftoverBuildSpaces(work)).toBe(1);
    expect(await mountsUnder(work)).toEqual([]);
  });
});

describe("artifact cap", () => {
  it("fails a build whose artifact is larger than the cap and keeps no partial artifact", async () => {
    const built = await buildFiles("js", [HANDLER, preinstall("head -c 3000000 /dev/urandom > data.bin")], { maxArtifactMiB: 1 });
    expect(built.result.ok).toBe(false);
    expect(built.log.at(-1)).toMatch(/^\[build\] failed: artifact larger than 1 MiB\b/);
    expect(await fs.readdir(built.workDir)).toEqual([]);
  });
});
