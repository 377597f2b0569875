import fs from "node:fs/promises";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { unzipSafely, DEFAULT_UNZIP_LIMITS } from "../../agent/builder/index.js";
import { ensureEnvironment } from "./helpers/environment.js";
import { buildFunction } from "../../agent/builder/index.js";
import { BUILD_AGENT_ID, buildZip, removeTempDirs, tempDir, type Built } from "./helpers/functions.js";
import { lieAboutSizes, markEncrypted, renameEntry, zipItems } from "../support/zip.js";

const HANDLER = { name: "handler.py", data: "def handle(event, context):\n    return 1\n" };

/** Lists every file under `dir`, to prove nothing was written beside the build folder. */
async function tree(dir: string): Promise<string[]> {
  const entries = await fs.readdir(dir, { recursive: true });
  return entries.sort();
}

afterAll(async () => {
  await removeTempDirs();
});

beforeAll(async () => {
  await ensureEnvironment(["py"]);
});

describe("zip slip", () => {
  it("refuses an entry whose path climbs out with ../ and writes nothing outside", async () => {
    const parent = await tempDir("slip");
    const zip = renameEntry(await zipItems([HANDLER, { name: "xx/evil.txt", data: "pwned" }]), "xx/evil.txt", "../evil.txt");
    await expect(unzipSafely(zip, await mkdir(parent, "dest"), DEFAULT_UNZIP_LIMITS)).rejects.toThrow(/climbs out of the folder/);
    expect(await tree(parent)).toEqual(["dest", "dest/handler.py"]);
    const built = await buildZip("py", zip);
    expect(built.result.ok).toBe(false);
    expect(built.log.join("\n")).toMatch(/zip refused: zip entry "\.\.\/evil\.txt" climbs out of the folder with "\.\." \(zip slip\)/);
  });

  it("refuses an absolute path", async () => {
    const parent = await tempDir("abs");
    const zip = renameEntry(await zipItems([{ name: "xtmp/evil.txt", data: "pwned" }]), "xtmp/evil.txt", "/tmp/evil.txt");
    await expect(unzipSafely(zip, await mkdir(parent, "dest"), DEFAULT_UNZIP_LIMITS)).rejects.toThrow(/absolute path/);
    expect(await tree(parent)).toEqual(["dest"]);
  });
});

describe("symlink escape", () => {
  it("refuses a symlink that points outside the folder, and never writes through it", async () => {
    const parent = await tempDir("symlink");
    const zip = await zipItems([
      HANDLER,
      { name: "escape", data: "../../outside", mode: 0o120777 },
      { name: "escape/planted.txt", data: "pwned" },
    ]);
    await expect(unzipSafely(zip, await mkdir(parent, "dest"), DEFAULT_UNZIP_LIMITS)).rejects.toThrow(/symlink/);
    const files = await tree(parent);
    expect(files.every((f) => f.startsWith("dest"))).toBe(true);
    expect(files).not.toContain("outside");
  });

  it("refuses an absolute symlink target", async () => {
    const zip = await zipItems([HANDLER, { name: "passwd", data: "/etc/passwd", mode: 0o120777 }]);
    const built = await buildZip("py", zip);
    expect(built.result.ok).toBe(false);
    expect(built.log.join("\n")).toMatch(/zip entry "passwd" is a symlink to "\/etc\/passwd", which leaves the folder/);
  });

  it("refuses a chain of links that each look inside but together climb out", async () => {
    const parent = await tempDir("symlink-chain");
    const dest = await mkdir(parent, "dest");
    // Read by name, a/b/up is a/b/../../loop/.. = the folder itself; on disk loop is the folder,
    // so loop/.. is its parent. `up` comes first, while `loop` does not exist yet.
    const zip = await zipItems([
      HANDLER,
      { name: "a/b/keep.txt", data: "x" },
      { name: "a/b/up", data: "../../loop/..", mode: 0o120777 },
      { name: "loop", data: ".", mode: 0o120777 },
    ]);
    await expect(unzipSafely(zip, dest, DEFAULT_UNZIP_LIMITS)).rejects.toThrow(/"a\/b\/up" is a symlink to "\.\.\/\.\.\/loop\/\.\.", which goes through another symlink/);
    const real = await fs.realpath(dest);
    for (const f of await tree(dest)) expect((await fs.realpath(path.join(dest, f)).catch(() => real)).startsWith(real)).toBe(true);
    const built = await buildZip("py", zip);
    expect(built.result.ok).toBe(false);
    expect(built.log.join("\n")).toMatch(/goes through another symlink of the zip/);
  });

  it("keeps links that climb over real folders and links to links", async () => {
    const parent = await tempDir("symlink-up");
    const dest = await mkdir(parent, "dest");
    const zip = await zipItems([
      HANDLER,
      { name: "node_modules/tool/cli.js", data: "1" },
      { name: "node_modules/.bin/tool", data: "../tool/cli.js", mode: 0o120777 },
      { name: "run", data: "node_modules/.bin/tool", mode: 0o120777 },
    ]);
    await unzipSafely(zip, dest, DEFAULT_UNZIP_LIMITS);
    expect(await fs.readFile(path.join(dest, "run"), "utf8")).toBe("1");
  });

  it("keeps a symlink that stays inside the folder", async () => {
    const parent = await tempDir("symlink-ok");
    const dest = await mkdir(parent, "dest");
    const zip = await zipItems([HANDLER, { name: "lib/real.py", data: "x = 1\n" }, { name: "alias.py", data: "lib/real.py", mode: 0o120777 }]);
    await unzipSafely(zip, dest, DEFAULT_UNZIP_LIMITS);
    expect(await fs.readlink(path.join(dest, "alias.py"))).toBe("lib/real.py");
  });
});

describe("zip bomb", () => {
  it("refuses a zip that unpacks past the size limit", async () => {
    const zeros = Buffer.alloc(48 * 1024 * 1024);
    const zip = await zipItems([HANDLER, { name: "a.bin", data: zeros }, { name: "b.bin", data: zeros }]);
    expect(zip.length).toBeLessThan(1024 * 1024);
    const built = await buildZip("py", zip, { maxUncompressedBytes: 64 * 1024 * 1024 });
    expect(built.result.ok).toBe(false);
    expect(built.log.join("\n")).toMatch(/zip unpacks to more than 64 MiB, the limit; refusing a possible zip bomb/);
  });

  it("counts the bytes actually inflated, not the sizes the headers claim", async () => {
    const parent = await tempDir("bomb");
    const zip = lieAboutSizes(await zipItems([{ name: "bomb.bin", data: Buffer.alloc(32 * 1024 * 1024) }]), 1000);
    await expect(unzipSafely(zip, await mkdir(parent, "dest"), DEFAULT_UNZIP_LIMITS)).rejects.toThrow(/zip bomb/);
    const written = await fs.stat(path.join(parent, "dest", "bomb.bin")).catch(() => null);
    expect(written === null || written.size <= 1024 * 1024).toBe(true);
  });

  it("refuses more entries than the limit", async () => {
    const items = Array.from({ length: 30 }, (_, i) => ({ name: `f${i}.txt`, data: "x" }));
    const built = await buildZip("py", await zipItems([HANDLER, ...items]), { maxEntries: 20 });
    expect(built.result.ok).toBe(false);
    expect(built.log.join("\n")).toMatch(/zip has 31 entries, more than the limit of 20/);
  });

  it("holds the default limits of the issue: 10,000 entries and 500 MiB", () => {
    expect(DEFAULT_UNZIP_LIMITS).toEqual({ maxEntries: 10_000, maxUncompressedBytes: 500 * 1024 * 1024 });
  });
});

describe("encrypted and malformed zips", () => {
  it("refuses encrypted entries", async () => {
    const built = await buildZip("py", markEncrypted(await zipItems([HANDLER])));
    expect(built.result.ok).toBe(false);
    expect(built.log.join("\n")).toMatch(/zip entry "handler\.py" is encrypted/);
  });

  it("refuses something that is not a zip", async () => {
    const built = await buildZip("py", Buffer.from("definitely not a zip"));
    expect(built.result.ok).toBe(false);
    expect(built.log.join("\n")).toMatch(/not a readable zip archive/);
  });
});

describe("names the file system cannot hold, and every other unpacking failure (issue 22, item 7)", () => {
  /** The build failed with exactly `reason`, said in the zip's terms: no host path, no errno, within the report's bounds. */
  function expectRefusal(built: Built, reason: string): void {
    expect(built.result).toMatchObject({ ok: false, reason });
    expect(built.log.at(-1)).toBe(`[build] failed: ${reason}`);
    const text = [...built.log, reason].join("\n");
    expect(text).not.toContain(path.dirname(built.workDir));
    expect(text).not.toMatch(/\/tmp\/|\.state|\bE[A-Z]{4,}\b|errno|open '/);
    // build.done carries at most 4,096 characters of reason, a build.log line at most 8,192.
    expect(reason.length).toBeLessThanOrEqual(4096);
  }

  it("refuses a file name over 255 bytes, naming the entry as in the zip", async () => {
    const name = `${"a".repeat(300)}.py`;
    const shown = `${"a".repeat(80)}…${"a".repeat(27)}.py`;
    expectRefusal(
      await buildZip("py", await zipItems([HANDLER, { name, data: "x" }])),
      `zip refused: zip entry "${shown}" has a folder or file name of 303 bytes ("${shown}"); each may have at most 255 bytes`,
    );
  });

  it("refuses a folder name over 255 bytes, counted in bytes, not characters", async () => {
    const folder = "€".repeat(90); // 90 characters, 270 bytes
    expectRefusal(
      await buildZip("py", await zipItems([HANDLER, { name: `${folder}/x.py`, data: "x" }])),
      `zip refused: zip entry "${folder}/x.py" has a folder or file name of 270 bytes ("${folder}"); each may have at most 255 bytes`,
    );
  });

  it("refuses a name over 1,024 bytes made of short parts", async () => {
    const name = `${"p".repeat(39)}/`.repeat(30) + "f.py";
    expectRefusal(
      await buildZip("py", await zipItems([HANDLER, { name, data: "x" }])),
      `zip refused: zip entry "${name.slice(0, 80)}…${name.slice(-30)}" is 1204 bytes long; names may have at most 1024 bytes`,
    );
  });

  it("refuses a path nested more than 100 folders deep", async () => {
    const name = "d/".repeat(150) + "f.py";
    expectRefusal(
      await buildZip("py", await zipItems([HANDLER, { name, data: "x" }])),
      `zip refused: zip entry "${name.slice(0, 80)}…${name.slice(-30)}" is nested 150 folders deep; at most 100 are allowed`,
    );
  });

  it("keeps a 64 KiB name out of the reason: it is shown shortened", async () => {
    const name = "n".repeat(60_000);
    expectRefusal(
      await buildZip("py", await zipItems([HANDLER, { name, data: "x" }])),
      `zip refused: zip entry "${"n".repeat(80)}…${"n".repeat(30)}" is 60000 bytes long; names may have at most 1024 bytes`,
    );
  });

  it("refuses a symlink whose target has a name over 255 bytes", async () => {
    const target = "t".repeat(300);
    expectRefusal(
      await buildZip("py", await zipItems([HANDLER, { name: "link", data: target, mode: 0o120777 }])),
      `zip refused: zip entry "link" is a symlink whose target has a folder or file name of 300 bytes ("${"t".repeat(80)}…${"t".repeat(30)}"); each may have at most 255 bytes`,
    );
  });

  it("says a name held twice in words, not with the file system's error", async () => {
    expectRefusal(
      await buildZip("py", await zipItems([HANDLER, { name: "dup.py", data: "1" }, { name: "dup.py", data: "2" }])),
      `zip refused: zip entry "dup.py" could not be unpacked: the zip holds it more than once`,
    );
  });

  it("says a failure of the node itself without its cause (a zip file gone from the node's disk)", async () => {
    const log: string[] = [];
    const workDir = path.join(await tempDir("build-gone"), "work");
    const gone = path.join(path.dirname(workDir), "source.zip");
    const result = await buildFunction({ lang: "py", zip: gone, workDir, onLog: (l) => log.push(l), agentId: BUILD_AGENT_ID });
    expectRefusal({ result, log, workDir, buildId: "gone" }, "internal error on the build node; the operator's log has the cause");
  });
});

async function mkdir(parent: string, name: string): Promise<string> {
  const dir = path.join(parent, name);
  await fs.mkdir(dir);
  return dir;
}
