import { execFile, spawn } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { offlineImageTag, RUNTIME_DIR, type Lang } from "./languages.js";

const run = promisify(execFile);
/**
 * The folder holding agent/runtimes/ and scripts/images/: the repository when run from source
 * (this file is agent/runtimes/images.ts), or the release folder when run as the bundled
 * gcfaas-agent.mjs, which scripts/release-agent.sh lays out with the same relative paths.
 */
const REPO_ROOT = [import.meta.dirname, path.resolve(import.meta.dirname, "../..")].find((dir) => existsSync(path.join(dir, "agent/runtimes"))) ?? path.resolve(import.meta.dirname, "../..");
const BUILD_SCRIPT = path.join(REPO_ROOT, "scripts/images/build-offline.sh");

/** Same value as scripts/images/shim-hash.sh: a changed shim must rebuild its image layer. */
export async function shimHash(lang: Lang): Promise<string> {
  const dir = path.join(REPO_ROOT, "agent/runtimes", RUNTIME_DIR[lang]);
  const files = (await fs.readdir(dir, { recursive: true, withFileTypes: true }))
    .filter((d) => d.isFile() && !d.name.endsWith(".md"))
    .map((d) => path.relative(dir, path.join(d.parentPath, d.name)))
    .sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
  const hash = createHash("sha256");
  for (const file of files) {
    hash.update(file);
    hash.update("\0");
    hash.update(await fs.readFile(path.join(dir, file)));
    hash.update("\0");
  }
  return hash.digest("hex").slice(0, 16);
}

async function imageShimHash(tag: string): Promise<string | null> {
  try {
    const { stdout } = await run("docker", ["image", "inspect", "-f", '{{ index .Config.Labels "gcfaas.shim-hash" }}', tag]);
    return stdout.trim();
  } catch {
    return null;
  }
}

/** Fails with a readable message when no Docker Engine answers. */
export async function assertDockerRunning(): Promise<void> {
  try {
    await run("docker", ["version", "--format", "{{.Server.Version}}"], { timeout: 20_000 });
  } catch (err) {
    throw new Error(`Docker Engine is not reachable (${err instanceof Error ? err.message : String(err)}); run scripts/images/ensure-docker.sh`);
  }
}

/**
 * Builds the offline images of `langs` that are missing or carry an older shim; present, current
 * images cost one `docker image inspect` each. Output goes to `onLog` line by line.
 */
export async function ensureOfflineImages(langs: readonly Lang[], onLog: (line: string) => void = () => undefined): Promise<void> {
  const stale: Lang[] = [];
  for (const lang of langs) {
    if ((await imageShimHash(offlineImageTag(lang))) !== (await shimHash(lang))) stale.push(lang);
  }
  if (stale.length === 0) return;
  await new Promise<void>((resolve, reject) => {
    const child = spawn("bash", [BUILD_SCRIPT, ...stale.map((l) => RUNTIME_DIR[l])], { stdio: ["ignore", "pipe", "pipe"] });
    let tail = "";
    const onData = (chunk: Buffer) => {
      const text = chunk.toString();
      tail = (tail + text).slice(-4000);
      for (const line of text.split("\n")) if (line.trim()) onLog(line);
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", onData);
    child.on("error", reject);
    child.on("close", (code) => (code === 0 ? resolve() : reject(new Error(`build-offline.sh failed (${code}):\n${tail}`))));
  });
}
