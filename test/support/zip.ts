import fs from "node:fs";
import path from "node:path";
import yazl from "yazl";

export interface ZipItem {
  name: string;
  data: Buffer | string;
  /** Unix mode including the file type bits, e.g. 0o120777 for a symlink. */
  mode?: number;
}

function collect(zip: yazl.ZipFile): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    zip.outputStream.on("data", (c: Buffer) => chunks.push(c));
    zip.outputStream.on("end", () => resolve(Buffer.concat(chunks)));
    zip.outputStream.on("error", reject);
  });
}

export function zipItems(items: ZipItem[]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const item of items) {
    const data = typeof item.data === "string" ? Buffer.from(item.data) : item.data;
    zip.addBuffer(data, item.name, item.mode === undefined ? {} : { mode: item.mode });
  }
  zip.end();
  return collect(zip);
}

/** Zips a folder the way a user would upload it: its contents at the top level. */
export function zipFolder(dir: string): Promise<Buffer> {
  const items: ZipItem[] = [];
  const walk = (at: string, rel: string) => {
    for (const entry of fs.readdirSync(at, { withFileTypes: true })) {
      const full = path.join(at, entry.name);
      const name = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(full, name);
      else items.push({ name, data: fs.readFileSync(full), mode: fs.statSync(full).mode });
    }
  };
  walk(dir, "");
  return zipItems(items);
}

/** Renames an entry in place (same length), to make names yazl itself refuses to write. */
export function renameEntry(zip: Buffer, from: string, to: string): Buffer {
  if (from.length !== to.length) throw new Error("names must have the same length");
  const out = Buffer.from(zip);
  const needle = Buffer.from(from);
  let at = out.indexOf(needle);
  if (at === -1) throw new Error(`entry ${from} not found`);
  while (at !== -1) {
    Buffer.from(to).copy(out, at);
    at = out.indexOf(needle, at + 1);
  }
  return out;
}

/** Rewrites every recorded uncompressed size (central directory and data descriptors) to `size`. */
export function lieAboutSizes(zip: Buffer, size: number): Buffer {
  const out = Buffer.from(zip);
  for (let i = 0; i + 4 <= out.length; i++) {
    const sig = out.readUInt32LE(i);
    if (sig === 0x02014b50) out.writeUInt32LE(size, i + 24);
    else if (sig === 0x08074b50) out.writeUInt32LE(size, i + 12);
  }
  return out;
}

/** Sets the "encrypted" flag on every entry (the data is left as is: the flag alone must be refused). */
export function markEncrypted(zip: Buffer): Buffer {
  const out = Buffer.from(zip);
  for (let i = 0; i + 4 <= out.length; i++) {
    const sig = out.readUInt32LE(i);
    if (sig === 0x04034b50) out.writeUInt16LE(out.readUInt16LE(i + 6) | 1, i + 6);
    else if (sig === 0x02014b50) out.writeUInt16LE(out.readUInt16LE(i + 8) | 1, i + 8);
  }
  return out;
}

/** Zips in-memory sources: `{ "handler.py": "..." }`. */
export const zipSources = (files: Record<string, string>): Promise<Buffer> => zipItems(Object.entries(files).map(([name, data]) => ({ name, data })));
