import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The Docker Engine's mount namespace as a file: <proc>/<dockerd's pid>/ns/mnt. */
export async function engineMountNamespace(proc = "/proc"): Promise<string> {
  const pid = (await fs.readFile("/var/run/docker.pid", "utf8").catch(async () => (await run("pidof", ["dockerd"])).stdout)).trim().split(/\s+/)[0];
  if (!pid || !/^\d+$/.test(pid)) throw new Error("the Docker Engine's process (dockerd) was not found");
  return `${proc}/${pid}/ns/mnt`;
}
