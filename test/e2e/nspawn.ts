import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { ROOT } from "./harness.js";

const run = promisify(execFile);
const CACHE = path.join(ROOT, ".state/install-agent/nspawn");

/**
 * systemd-nspawn, to boot a root with systemd as its PID 1 where the host's PID 1 is not systemd.
 * The host's own when installed; else Debian's systemd-container package of the host's systemd
 * version, unpacked into .state/ (its binary needs that version's libsystemd-shared).
 */
export async function nspawnBinary(): Promise<string> {
  const onPath = await run("sh", ["-c", "command -v systemd-nspawn"]).then((r) => r.stdout.trim(), () => "");
  if (onPath) return onPath;
  const binary = path.join(CACHE, "usr/bin/systemd-nspawn");
  if (existsSync(binary)) return binary;
  const version = await run("dpkg-query", ["-W", "-f", "${Version}", "systemd"]).then(
    (r) => r.stdout.trim(),
    () => {
      throw new Error("systemd-nspawn is missing and so is Debian's systemd package whose version it would match: apt-get install systemd-container");
    },
  );
  await fs.mkdir(CACHE, { recursive: true });
  await run("apt-get", ["download", `systemd-container=${version}`], { cwd: CACHE });
  const deb = (await fs.readdir(CACHE)).find((f) => f.endsWith(".deb"))!;
  await run("dpkg", ["-x", path.join(CACHE, deb), CACHE]);
  return binary;
}

/**
 * Boots `root` with its systemd; the host's network, the host's Docker socket at /run/docker.sock
 * and `binds` at the same paths. SIGTERM to the returned process halts the container cleanly.
 */
export async function bootWithSystemd(root: string, binds: string[]): Promise<ChildProcess> {
  const args = ["-q", "--register=no", "--keep-unit", "-D", root, "-b", "--console=pipe", "--bind=/var/run/docker.sock:/run/docker.sock", ...binds.map((b) => `--bind=${b}`)];
  return spawn(await nspawnBinary(), args, { stdio: ["ignore", "pipe", "pipe"] });
}

