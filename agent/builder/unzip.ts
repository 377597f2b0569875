import { constants as fsConstants } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { Transform, type TransformCallback } from "node:stream";
import { pipeline } from "node:stream/promises";
import yauzl from "yauzl";
import { unpackFailure } from "./unpack-failure.js";
import { checkNameFits, shownName } from "./zip-names.js";
import { ZipRefusedError } from "./zip-refused.js";

export { ZipRefusedError };

export interface UnzipLimits {
  maxEntries: number;
  maxUncompressedBytes: number;
}

export const DEFAULT_UNZIP_LIMITS: UnzipLimits = {
  maxEntries: 10_000,
  maxUncompressedBytes: 500 * 1024 * 1024,
};

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;
const S_IFDIR = 0o040000;

/**
 * Unpacks a zip into `dest` (an empty directory) with every check the builder promises: no path
 * leaves `dest`, no encrypted entries, bounded entry count and bounded bytes actually written (the
 * sizes in zip headers are attacker-chosen, so the streams themselves are counted), names the file
 * system can hold. Every refusal speaks of the zip (the entry's name as in the zip, a reason in
 * words), never of the host: no host path and no errno text reaches the build log.
 */
export async function unzipSafely(zip: Buffer | string, dest: string, limits: UnzipLimits): Promise<{ entries: number; bytes: number }> {
  const root = path.resolve(dest);
  const zipfile = await openZip(zip);
  try {
    if (zipfile.entryCount > limits.maxEntries) {
      throw new ZipRefusedError(`zip has ${zipfile.entryCount} entries, more than the limit of ${limits.maxEntries}`);
    }
    let entries = 0;
    let bytes = 0;
    const links: { at: string; name: string; target: string }[] = [];
    for await (const entry of zipfile.eachEntry()) {
      entries += 1;
      if (entries > limits.maxEntries) throw new ZipRefusedError(`zip has more than ${limits.maxEntries} entries`);
      const name = decodeName(entry);
      const at = checkedPath(root, name);
      if (entry.isEncrypted()) throw new ZipRefusedError(`zip entry ${shownName(name)} is encrypted; encrypted zips are not supported`);
      if (bytes + entry.uncompressedSize > limits.maxUncompressedBytes) throw tooBig(limits);
      const mode = (entry.externalFileAttributes >>> 16) & 0xffff;
      if ((mode & S_IFMT) === S_IFLNK) {
        const target = (await readAll(zipfile, entry, 4096)).toString("utf8");
        // Links are made after every file is written, so no write can go through one.
        links.push({ at, name, target });
        continue;
      }
      try {
        if (name.endsWith("/") || (mode & S_IFMT) === S_IFDIR) {
          await makeRealDir(root, at);
          continue;
        }
        await makeRealDir(root, path.dirname(at));
        bytes += await writeEntry(zipfile, entry, at, mode, new ByteCounter(limits.maxUncompressedBytes - bytes, limits));
      } catch (err) {
        throw (err as NodeJS.ErrnoException).code ? unpackFailure(err, name) : err;
      }
    }
    const linkPaths = new Set(links.map((l) => l.at));
    for (const link of links) await makeLink(root, link, linkPaths).catch((err: unknown) => Promise.reject(unpackFailure(err, link.name)));
    return { entries, bytes };
  } catch (err) {
    if (err instanceof ZipRefusedError) throw err;
    // A system error here is the node's (reading the uploaded zip), not the zip's: not the tenant's to read.
    if ((err as NodeJS.ErrnoException).code) throw err;
    const message = (err instanceof Error ? err.message : String(err)).slice(0, 200);
    if (/too many bytes|too few bytes/.test(message)) {
      throw new ZipRefusedError(`zip entry sizes do not match their headers (${message}); refusing a possible zip bomb`);
    }
    throw new ZipRefusedError(`zip could not be read: ${message}`);
  } finally {
    zipfile.close();
  }
}

function openZip(zip: Buffer | string): Promise<yauzl.ZipFile> {
  const options: yauzl.Options = { lazyEntries: true, decodeStrings: false, validateEntrySizes: true, autoClose: false };
  return new Promise((resolve, reject) => {
    const done = (err: Error | null, zipfile: yauzl.ZipFile) => {
      // yauzl's own errors describe the archive; a system error (the file, the disk) is the node's.
      if (err) reject((err as NodeJS.ErrnoException).code ? err : new ZipRefusedError(`not a readable zip archive: ${err.message.slice(0, 200)}`));
      else resolve(zipfile);
    };
    if (typeof zip === "string") yauzl.open(zip, options, done);
    else yauzl.fromBuffer(zip, options, done);
  });
}

function decodeName(entry: yauzl.Entry): string {
  // decodeStrings is off so that names are checked here, with our own messages.
  const raw = entry.fileName as unknown as Buffer;
  const utf8 = (entry.generalPurposeBitFlag & 0x800) !== 0;
  return raw.toString(utf8 ? "utf8" : "latin1");
}

function checkedPath(root: string, name: string): string {
  const shown = shownName(name);
  if (name.length === 0 || name.includes("\0")) throw new ZipRefusedError(`zip entry has an invalid name ${shown}`);
  if (name.includes("\\")) throw new ZipRefusedError(`zip entry ${shown} uses backslashes; use forward slashes`);
  if (name.startsWith("/") || /^[A-Za-z]:/.test(name)) {
    throw new ZipRefusedError(`zip entry ${shown} has an absolute path; entries must be relative`);
  }
  if (name.split("/").includes("..")) throw new ZipRefusedError(`zip entry ${shown} climbs out of the folder with ".." (zip slip)`);
  checkNameFits(name, `zip entry ${shown}`);
  const at = path.resolve(root, name);
  if (!isInside(root, at)) throw new ZipRefusedError(`zip entry ${shown} resolves outside the folder (zip slip)`);
  return at;
}

/** Writes one file entry at `at` (never through a link, never over another) and returns its size. */
async function writeEntry(zipfile: yauzl.ZipFile, entry: yauzl.Entry, at: string, mode: number, counter: ByteCounter): Promise<number> {
  const stream = await zipfile.openReadStreamPromise(entry);
  // yauzl may emit a size error again after pipeline() has detached; the first one is enough.
  stream.on("error", () => undefined);
  const flags = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW;
  const handle = await fs.open(at, flags, fileMode(mode));
  try {
    await pipeline(stream, counter, handle.createWriteStream());
  } finally {
    await handle.close().catch(() => undefined);
  }
  return counter.count;
}

function isInside(root: string, candidate: string): boolean {
  const rel = path.relative(root, candidate);
  return rel === "" || (!rel.startsWith("..") && !path.isAbsolute(rel));
}

/** mkdir -p that refuses to pass through anything but real directories (never a symlink). */
async function makeRealDir(root: string, dir: string): Promise<void> {
  const rel = path.relative(root, dir);
  let current = root;
  for (const part of rel === "" ? [] : rel.split(path.sep)) {
    current = path.join(current, part);
    const stat = await fs.lstat(current).catch(() => null);
    if (stat === null) await fs.mkdir(current, { mode: 0o755 });
    else if (!stat.isDirectory()) throw new ZipRefusedError(`zip entry path ${shownName(rel.split(path.sep).join("/"))} goes through a non-directory`);
  }
}

/**
 * Makes a symlink whose target provably stays inside the folder: the target is walked from the
 * link's folder one name at a time over the archive's real folders, never through another link of
 * the archive (only the last name may be one, itself checked the same way). A `..` over a real
 * folder means what it reads; over a link it would climb from wherever that link points, which is
 * how a chain of links that each look inside escapes (`a/b/up -> ../../loop/..`, `loop -> .`).
 */
async function makeLink(root: string, link: { at: string; name: string; target: string }, links: Set<string>): Promise<void> {
  const { at, name, target } = link;
  const leaves = () => new ZipRefusedError(`zip entry ${shownName(name)} is a symlink to ${shownName(target)}, which leaves the folder`);
  if (target === "" || path.isAbsolute(target) || target.includes("\\") || target.includes("\0")) throw leaves();
  checkNameFits(target, `zip entry ${shownName(name)} is a symlink whose target`);
  const steps = target.split("/").filter((p) => p !== "" && p !== ".");
  let current = path.dirname(at);
  for (const [i, step] of steps.entries()) {
    current = step === ".." ? path.dirname(current) : path.join(current, step);
    if (!isInside(root, current)) throw leaves();
    if (i < steps.length - 1 && links.has(current))
      throw new ZipRefusedError(`zip entry ${shownName(name)} is a symlink to ${shownName(target)}, which goes through another symlink of the zip`);
  }
  await makeRealDir(root, path.dirname(at));
  await fs.symlink(target, at);
}

function fileMode(zipMode: number): number {
  // Keep the executable bit, drop setuid/setgid/sticky and group/other write.
  return zipMode & 0o111 ? 0o755 : 0o644;
}

function tooBig(limits: UnzipLimits): ZipRefusedError {
  const mib = Math.round(limits.maxUncompressedBytes / 1024 / 1024);
  return new ZipRefusedError(`zip unpacks to more than ${mib} MiB, the limit; refusing a possible zip bomb`);
}

async function readAll(zipfile: yauzl.ZipFile, entry: yauzl.Entry, max: number): Promise<Buffer> {
  const stream = await zipfile.openReadStreamPromise(entry);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream) {
    size += (chunk as Buffer).length;
    if (size > max) throw new ZipRefusedError(`zip entry ${shownName(decodeName(entry))} is a symlink with an overlong target`);
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** Passes bytes through and fails as soon as more than `budget` bytes went by. */
class ByteCounter extends Transform {
  count = 0;
  constructor(
    private readonly budget: number,
    private readonly limits: UnzipLimits,
  ) {
    super();
  }
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.count += chunk.length;
    if (this.count > this.budget) callback(tooBig(this.limits));
    else callback(null, chunk);
  }
}
