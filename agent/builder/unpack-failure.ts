import { log } from "../log.js";
import { shownName } from "./zip-names.js";
import { ZipRefusedError } from "./zip-refused.js";

/** What an errno means for an entry being unpacked, in the zip's terms. */
const REASONS: Record<string, string> = {
  ENOSPC: "the build space is full",
  EDQUOT: "the build space is full",
  EFBIG: "the file is too large for the build space",
  ENAMETOOLONG: "its name is too long for the file system",
  EEXIST: "the zip holds it more than once",
  ENOTDIR: "its path goes through something that is not a folder",
  ELOOP: "its path goes through a symlink",
  EISDIR: "a folder of that name is in the zip too",
  EMLINK: "its folder holds too many entries",
  EILSEQ: "its name is not valid on the file system",
  EINVAL: "its name is not valid on the file system",
};

/**
 * The refusal for a file-system error met while unpacking `name`: what went wrong, said of the
 * entry. The error itself (host path, errno) goes to the operator's log only.
 */
export function unpackFailure(err: unknown, name: string): ZipRefusedError {
  if (err instanceof ZipRefusedError) return err;
  const code = (err as NodeJS.ErrnoException).code ?? "";
  const reason = REASONS[code];
  if (!reason) log("warn", "zip entry could not be unpacked", { entry: name.slice(0, 256), error: err instanceof Error ? err.message : String(err) });
  return new ZipRefusedError(`zip entry ${shownName(name)} could not be unpacked: ${reason ?? "the build node could not write it"}`);
}
