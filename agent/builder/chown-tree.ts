import fs from "node:fs/promises";
import path from "node:path";

/** chown -R that never follows a symlink (lchown on links, recursion only into real directories). */
export async function chownTree(root: string, uid: number, gid = uid): Promise<void> {
  await fs.lchown(root, uid, gid);
  for (const entry of await fs.readdir(root, { withFileTypes: true })) {
    const at = path.join(root, entry.name);
    if (entry.isDirectory()) await chownTree(at, uid, gid);
    else await fs.lchown(at, uid, gid);
  }
}
