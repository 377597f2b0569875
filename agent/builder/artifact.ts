import { execFile, spawn } from "node:child_process";
import { createWriteStream } from "node:fs";
import fs from "node:fs/promises";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The build's output does not fit the artifact cap; the message goes to the build log as is. */
export class ArtifactTooLargeError extends Error {
  constructor(readonly maxBytes: number) {
    super(`artifact larger than ${Math.floor(maxBytes / 1048576)} MiB`);
  }
}

/**
 * An artifact is a plain tar of the built function folder: any node can unpack it in well under a
 * second and bind-mount it read-only into the runtime image. GNU tar keeps symlinks as symlinks on
 * both sides, so nothing in an artifact can make the host follow a link.
 *
 * The tar is streamed to `artifactPath` and counted on the way: past `maxBytes` tar is stopped and
 * the partial file removed, so an oversized output costs neither memory nor more than the cap of disk.
 */
export async function packArtifact(folder: string, artifactPath: string, maxBytes = Number.MAX_SAFE_INTEGER): Promise<number> {
  const tar = spawn("tar", ["--create", "--file", "-", "--directory", folder, "--numeric-owner", "--owner=0", "--group=0", "."], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  tar.stderr.on("data", (c: Buffer) => (stderr = (stderr + c.toString()).slice(-2000)));
  const exited = new Promise<number | null>((resolve, reject) => {
    tar.on("error", reject);
    tar.on("close", (code) => resolve(code));
  });
  let bytes = 0;
  const cap = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      done(bytes > maxBytes ? new ArtifactTooLargeError(maxBytes) : null, chunk);
    },
  });
  try {
    await pipeline(tar.stdout, cap, createWriteStream(artifactPath, { mode: 0o600 }));
  } catch (err) {
    tar.kill("SIGKILL");
    await exited.catch(() => undefined);
    await fs.rm(artifactPath, { force: true });
    throw err;
  }
  const code = await exited;
  if (code !== 0) {
    await fs.rm(artifactPath, { force: true });
    throw new Error(`tar exited with code ${code}: ${stderr.trim()}`);
  }
  return bytes;
}

/** Unpacks into `dest` (created) owned by root, readable by everyone, writable by no one else. */
export async function unpackArtifact(artifactPath: string, dest: string): Promise<void> {
  await fs.mkdir(dest, { recursive: true });
  await run("tar", ["--extract", "--file", artifactPath, "--directory", dest, "--no-same-owner", "--no-same-permissions", "--delay-directory-restore"]);
  await run("chmod", ["-R", "a+rX,go-w", dest]);
}
