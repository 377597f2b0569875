import fs from "node:fs/promises";
import path from "node:path";

export interface ArtifactSource {
  download(p: string, dest: string): Promise<void>;
}

export interface ArtifactUser {
  /** Removes the build's idle containers and its unpacked copy. */
  forgetBuild(buildId: string): Promise<void>;
}

/**
 * Build artifacts on this node: each downloaded once however many tasks ask at the same time, and
 * kept for the `keep` most recently used builds. Older ones — tar, unpacked folder, idle warm
 * containers — are removed once no task of theirs runs, so a long-lived agent's disk stays bounded.
 */
export class ArtifactStore {
  private readonly files = new Map<string, Promise<string>>();
  private readonly lastUse = new Map<string, number>();
  private readonly running = new Map<string, number>();
  private clock = 0;

  constructor(
    private readonly dir: string,
    private readonly source: ArtifactSource,
    private readonly user: ArtifactUser,
    private readonly keep = 32,
  ) {}

  private fileOf(buildId: string) {
    return path.join(this.dir, `${buildId}.tar`);
  }

  /** A build's artifact for one task; call the returned release() when the task ends. */
  async acquire(buildId: string, artifactPath: string): Promise<{ file: string; release: () => Promise<void> }> {
    this.touch(buildId);
    this.running.set(buildId, (this.running.get(buildId) ?? 0) + 1);
    try {
      const file = await this.fetch(buildId, artifactPath);
      return { file, release: () => this.release(buildId) };
    } catch (e) {
      await this.release(buildId);
      throw e;
    }
  }

  /** An artifact this node just built: kept, as the node will likely run the function next. */
  async adopt(buildId: string, builtFile: string): Promise<void> {
    await fs.mkdir(this.dir, { recursive: true });
    await fs.copyFile(builtFile, this.fileOf(buildId));
    this.files.set(buildId, Promise.resolve(this.fileOf(buildId)));
    this.touch(buildId);
    await this.evict();
  }

  kept(): string[] {
    return [...this.lastUse.keys()];
  }

  private touch(buildId: string) {
    this.lastUse.set(buildId, ++this.clock);
  }

  private fetch(buildId: string, artifactPath: string): Promise<string> {
    let p = this.files.get(buildId);
    if (!p) {
      const file = this.fileOf(buildId);
      p = (async () => {
        if (!(await fs.stat(file).catch(() => null))) {
          await fs.mkdir(this.dir, { recursive: true });
          await this.source.download(artifactPath, file);
        }
        return file;
      })();
      p.catch(() => this.files.delete(buildId));
      this.files.set(buildId, p);
    }
    return p;
  }

  private async release(buildId: string) {
    const n = (this.running.get(buildId) ?? 1) - 1;
    if (n > 0) this.running.set(buildId, n);
    else this.running.delete(buildId);
    await this.evict();
  }

  private async evict() {
    const byAge = [...this.lastUse].sort((a, b) => a[1] - b[1]).map(([id]) => id);
    for (const buildId of byAge.slice(0, Math.max(0, byAge.length - this.keep))) {
      if (this.running.has(buildId)) continue;
      this.lastUse.delete(buildId);
      this.files.delete(buildId);
      await this.user.forgetBuild(buildId);
      await fs.rm(this.fileOf(buildId), { force: true });
    }
  }
}
