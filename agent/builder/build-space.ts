import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";
import { mountLoop, mountPointsUnder, unmountEverywhere } from "./host-mount.js";

const run = promisify(execFile);

const IMAGE = "space.img";
const MOUNT = "space";
/** Below this much free room (or with no free inode) a failed build is taken to have filled its space. */
const FULL_BELOW_BYTES = 1024 * 1024;

/**
 * A build's writable space: a sparse file holding an ext4 filesystem of a fixed size, loop-mounted
 * inside the build's folder. Everything a build step can write (its source, output, caches and
 * /tmp) lives on it, so a build that writes too much meets ENOSPC instead of filling the node's
 * disk, and unmounting and deleting the one file takes every byte it wrote with it. The file is
 * sparse: the host pays for what the build writes, never more than the size.
 */
export class BuildSpace {
  private constructor(
    private readonly dir: string,
    readonly root: string,
    readonly sizeMiB: number,
  ) {}

  /** Makes and mounts a space of `sizeMiB` in `dir` (an existing folder), its root owned by `uid`. */
  static async create(dir: string, sizeMiB: number, uid: number): Promise<BuildSpace> {
    const space = new BuildSpace(dir, path.join(dir, MOUNT), sizeMiB);
    const image = path.join(dir, IMAGE);
    try {
      const handle = await fs.open(image, "wx", 0o600);
      try {
        await handle.truncate(sizeMiB * 1024 * 1024);
      } finally {
        await handle.close();
      }
      // No journal and no reserved blocks: a build's space lives minutes, and all of it is the build's.
      await run("mkfs.ext4", ["-q", "-F", "-m", "0", "-O", "^has_journal", "-E", `root_owner=${uid}:${uid},nodiscard`, image]);
      await fs.mkdir(space.root, { mode: 0o700 });
      await mountLoop(image, space.root, "nosuid,nodev,noatime");
    } catch (err) {
      await space.dispose().catch(() => undefined);
      throw new Error(`build space could not be made (the agent needs root, mkfs.ext4 and loop devices): ${errorText(err)}`);
    }
    // lost+found is not the build's; it would also be the one thing the build cannot remove.
    await fs.rm(path.join(space.root, "lost+found"), { recursive: true, force: true });
    return space;
  }

  /** Whether the space is (practically) full: no room or no inodes left. */
  async isFull(): Promise<boolean> {
    const s = await fs.statfs(this.root);
    return s.bavail * s.bsize < FULL_BELOW_BYTES || s.ffree === 0;
  }

  /** Unmounts and deletes the space with everything in it. Safe to call twice. */
  async dispose(): Promise<void> {
    await unmountEverywhere(this.root);
    await fs.rm(path.join(this.dir, IMAGE), { force: true });
    await fs.rm(this.root, { recursive: true, force: true });
  }
}

/**
 * Makes and removes a small space under `dir`: an agent that cannot (not root, no loop devices)
 * stops at start with the reason rather than failing every build it is sent.
 */
export async function checkBuildSpaces(dir: string, uid: number): Promise<void> {
  const at = path.join(dir, `space-check-${process.pid}`);
  await fs.mkdir(at, { recursive: true });
  try {
    await (await BuildSpace.create(at, 64, uid)).dispose();
  } finally {
    await fs.rm(at, { recursive: true, force: true });
  }
}

/**
 * Unmounts the build spaces a previous agent process left under `dir` (it was killed mid-build):
 * until then neither their folders nor their disk room could be reclaimed.
 */
export async function removeLeftoverBuildSpaces(dir: string): Promise<number> {
  const left = (await mountPointsUnder(dir)).filter((p) => path.basename(p) === MOUNT);
  for (const at of left) await unmountEverywhere(at);
  return left.length;
}

function errorText(err: unknown): string {
  const e = err as { stderr?: string; message?: string };
  return (e.stderr || e.message || String(err)).trim();
}
