import { createHash } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import yazl from "yazl";
import { PROJECT_FILE } from "./project.js";

/** Never uploaded: CLI state and VCS/editor clutter. */
const SKIP = new Set([PROJECT_FILE, ".git", ".hg", ".svn", ".DS_Store"]);

export interface ZipResult {
  zip: Buffer;
  files: string[];
  /**
   * SHA-256 of the uploaded files' paths, modes and contents (not of the zip, whose bytes carry
   * times): the same folder content gives the same hash, so `up` can tell when to rebuild.
   */
  hash: string;
}

/**
 * Zips the contents of `dir` (not the folder itself), as the build upload expects: entries are
 * relative paths, in a stable order, with their file modes (so scripts stay executable).
 */
export async function zipFolderContents(dir: string): Promise<ZipResult> {
  const zip = new yazl.ZipFile();
  const files: string[] = [];
  const sha = createHash("sha256");
  const walk = async (rel: string): Promise<void> => {
    const entries = (await fs.readdir(path.join(dir, rel), { withFileTypes: true })).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    for (const entry of entries) {
      if (SKIP.has(entry.name)) continue;
      const r = rel ? `${rel}/${entry.name}` : entry.name;
      const abs = path.join(dir, r);
      const st = await fs.stat(abs).catch(() => undefined); // follows symlinks; dangling ones are skipped
      if (!st) continue;
      if (st.isDirectory()) await walk(r);
      else if (st.isFile()) {
        const data = await fs.readFile(abs);
        zip.addBuffer(data, r, { mtime: st.mtime, mode: st.mode & 0o777 });
        sha.update(`${r}\0${(st.mode & 0o777).toString(8)}\0${data.length}\0`).update(data);
        files.push(r);
      }
    }
  };
  await walk("");
  const buffer = await new Promise<Buffer>((resolve, reject) => {
    const parts: Buffer[] = [];
    zip.outputStream.on("data", (d: Buffer) => parts.push(d));
    zip.outputStream.on("end", () => resolve(Buffer.concat(parts)));
    zip.outputStream.on("error", reject);
    zip.end();
  });
  return { zip: buffer, files, hash: sha.digest("hex") };
}
