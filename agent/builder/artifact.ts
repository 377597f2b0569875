import { execFile } from "node:child_process";
import fs from "node:fs/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * An artifact is a plain tar of the built function folder: any node can unpack it in well under a
 * second and bind-mount it read-only into the runtime image. GNU tar keeps symlinks as symlinks on
 * both sides, so nothing in an artifact can make the host follow a link.
 */
export async function packArtifact(folder: string, artifactPath: string): Promise<number> {
  await run("tar", ["--create", "--file", artifactPath, "--directory", folder, "--numeric-owner", "--owner=0", "--group=0", "."]);
  return (await fs.stat(artifactPath)).size;
}

/** Unpacks into `dest` (created) owned by root, readable by everyone, writable by no one else. */
export async function unpackArtifact(artifactPath: string, dest: string): Promise<void> {
  await fs.mkdir(dest, { recursive: true });
  await run("tar", ["--extract", "--file", artifactPath, "--directory", dest, "--no-same-owner", "--no-same-permissions", "--delay-directory-restore"]);
  await run("chmod", ["-R", "a+rX,go-w", dest]);
}
