import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { unpackArtifact } from "../builder/artifact.js";

/** Unpacks each build's artifact once per node; concurrent cold starts of one build share the work. */
export class ArtifactCache {
  private readonly pending = new Map<string, Promise<string>>();

  constructor(private readonly dir: string) {}

  dirFor(buildId: string, artifactPath: string): Promise<string> {
    let entry = this.pending.get(buildId);
    if (!entry) {
      entry = this.unpack(buildId, artifactPath);
      entry.catch(() => this.pending.delete(buildId));
      this.pending.set(buildId, entry);
    }
    return entry;
  }

  private async unpack(buildId: string, artifactPath: string): Promise<string> {
    if (!/^[A-Za-z0-9_-]{1,128}$/.test(buildId)) throw new Error(`invalid build id "${buildId}"`);
    const dest = path.join(this.dir, buildId);
    if (await fs.stat(dest).catch(() => null)) return dest;
    // Unpack beside and rename, so a crash never leaves a half-unpacked folder that looks complete.
    const tmp = path.join(this.dir, `.${buildId}.${randomBytes(4).toString("hex")}`);
    await unpackArtifact(artifactPath, tmp);
    await fs.rename(tmp, dest).catch(async (err: NodeJS.ErrnoException) => {
      await fs.rm(tmp, { recursive: true, force: true });
      if (err.code !== "ENOTEMPTY" && err.code !== "EEXIST") throw err;
    });
    return dest;
  }

  async forget(buildId: string): Promise<void> {
    this.pending.delete(buildId);
    await fs.rm(path.join(this.dir, buildId), { recursive: true, force: true });
  }
}
