import fs from "node:fs/promises";
import path from "node:path";
import yazl from "yazl";

/** Zips the contents of a folder (not the folder itself), as the build upload expects. */
export async function zipFolder(dir: string): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  const walk = async (rel: string) => {
    for (const entry of await fs.readdir(path.join(dir, rel), { withFileTypes: true })) {
      const r = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) await walk(r);
      else if (entry.isFile()) zip.addBuffer(await fs.readFile(path.join(dir, r)), r);
    }
  };
  await walk("");
  return zipFiles(zip);
}

/** Zips in-memory files: `{ "handler.py": "..." }`. */
export function zipSources(files: Record<string, string>): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const [name, content] of Object.entries(files)) zip.addBuffer(Buffer.from(content), name);
  return zipFiles(zip);
}

function zipFiles(zip: yazl.ZipFile): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    zip.outputStream.on("data", (d: Buffer) => parts.push(d));
    zip.outputStream.on("end", () => resolve(Buffer.concat(parts)));
    zip.outputStream.on("error", reject);
    zip.end();
  });
}
