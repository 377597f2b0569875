import fs from "node:fs/promises";
import path from "node:path";

/**
 * Puts a build's unpacked artifact into a pooled container's own /function folder. Files are hard
 * links to the artifact cache (same disk: no bytes copied, and the container's read-only mount keeps
 * them unchangeable); where linking is refused (another file system), they are copied. The folder
 * holds this one function's files only: no folder shared with other functions is ever mounted.
 */
export async function linkTree(from: string, to: string): Promise<void> {
  const entries = await fs.readdir(from, { withFileTypes: true });
  await Promise.all(
    entries.map(async (entry) => {
      const source = path.join(from, entry.name);
      const target = path.join(to, entry.name);
      if (entry.isDirectory()) {
        await fs.mkdir(target, { mode: (await fs.stat(source)).mode & 0o7777 });
        await linkTree(source, target);
      } else if (entry.isSymbolicLink()) {
        await fs.symlink(await fs.readlink(source), target);
      } else if (entry.isFile()) {
        await fs.link(source, target).catch(async (err: NodeJS.ErrnoException) => {
          if (err.code !== "EXDEV" && err.code !== "EPERM") throw err;
          await fs.copyFile(source, target);
          await fs.chmod(target, (await fs.stat(source)).mode & 0o7777);
        });
      }
    }),
  );
}
