import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import path from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * The mount namespace the Docker Engine binds build folders from, as a file (/proc/1/ns/mnt, or a
 * bind of dockerd's /proc/PID/ns/mnt). Unset: the agent shares the engine's namespace. It is one
 * setting of the whole agent process (one engine per agent), set once at start.
 */
let engineNamespace: string | undefined;

/**
 * Says where the engine's mount namespace is. A sandboxed unit (ProtectSystem, PrivateTmp…) gives
 * the agent a namespace of its own whose mounts do not reach the engine: a build space mounted only
 * there would leave dockerd binding the empty folder beneath it into the build container.
 */
export async function useEngineMountNamespace(file: string | undefined): Promise<void> {
  if (file === undefined) {
    engineNamespace = undefined;
    return;
  }
  let same: boolean;
  try {
    const [engine, own] = await Promise.all([fs.stat(file), fs.stat("/proc/self/ns/mnt")]);
    same = engine.ino === own.ino && engine.dev === own.dev;
  } catch (err) {
    throw new Error(`the engine's mount namespace ${file} cannot be read (the agent needs root, and CAP_SYS_PTRACE for another process's /proc/PID/ns/mnt): ${(err as Error).message}`);
  }
  engineNamespace = same ? undefined : file;
}

/** Whether mounts are made in the engine's namespace as well as the agent's own. */
export function mountsInEngineNamespace(): boolean {
  return engineNamespace !== undefined;
}

/**
 * Loop-mounts the filesystem in `image` at `at` where both the agent (which fills and measures the
 * space) and the engine (which binds it into the build container) see it. With a namespace of its
 * own, the agent attaches the loop device itself (devices are the same in every namespace) and
 * mounts it in the engine's namespace, then in its own unless that mount propagated to it: both
 * mounts are of the same filesystem, as the kernel shares one superblock per device.
 */
export async function mountLoop(image: string, at: string, options: string): Promise<void> {
  if (!engineNamespace) {
    // -o loop frees the loop device by itself at unmount (autoclear).
    await run("mount", ["-t", "ext4", "-o", `loop,${options}`, image, at]);
    return;
  }
  const device = (await run("losetup", ["--find", "--show", image])).stdout.trim();
  try {
    await run("nsenter", [`--mount=${engineNamespace}`, "mount", "-t", "ext4", "-o", options, device, at]);
    if (!(await mountPoints()).includes(path.resolve(at))) await run("mount", ["-t", "ext4", "-o", options, device, at]);
  } finally {
    // Detaching a device still mounted marks it to free itself when the last mount goes (autoclear).
    await run("losetup", ["--detach", device]);
  }
}

/** Unmounts `at` in the engine's namespace and the agent's own, wherever it is mounted. */
export async function unmountEverywhere(at: string): Promise<void> {
  if (engineNamespace && (await mountPoints(engineNamespace)).includes(path.resolve(at))) await unmount(at, ["nsenter", `--mount=${engineNamespace}`]);
  if ((await mountPoints()).includes(path.resolve(at))) await unmount(at, []);
}

async function unmount(at: string, prefix: string[]): Promise<void> {
  const umount = async (args: string[]) => {
    const argv = [...prefix, "umount", ...args, at];
    await run(argv[0]!, argv.slice(1));
  };
  try {
    await umount([]);
  } catch {
    // Something still holds a file open (a container's process being torn down): detach now,
    // the kernel frees the filesystem when the last user lets go.
    await umount(["--lazy"]);
  }
}

/** The mount points of the agent's own namespace, or of the namespace in `namespace`. */
export async function mountPoints(namespace?: string): Promise<string[]> {
  const table = namespace ? (await run("nsenter", [`--mount=${namespace}`, "cat", "/proc/self/mounts"], { maxBuffer: 64 * 1024 * 1024 })).stdout : await fs.readFile("/proc/self/mounts", "utf8");
  // Spaces and other odd characters in mount points are written as octal escapes.
  return table.split("\n").map((l) => l.split(" ")[1]).filter((p): p is string => !!p).map((p) => p.replace(/\\([0-7]{3})/g, (_, o: string) => String.fromCharCode(parseInt(o, 8))));
}

/** Mount points under `dir` in the engine's namespace and the agent's own, each once. */
export async function mountPointsUnder(dir: string): Promise<string[]> {
  const prefix = path.resolve(dir) + path.sep;
  const all = [...(await mountPoints()), ...(engineNamespace ? await mountPoints(engineNamespace) : [])];
  return [...new Set(all.filter((p) => p.startsWith(prefix)))];
}
