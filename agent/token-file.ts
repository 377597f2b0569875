import fs from "node:fs";

/**
 * The agent token from a file (`--token-file`, GCFAAS_AGENT_TOKEN_FILE): what install-agent.sh
 * writes, so that the token is neither on a command line (every user of the host reads those with
 * ps) nor in a unit's environment. Like ssh with a private key, a file that others may read is
 * refused rather than used: the token in it must be taken as leaked.
 */
export function readTokenFile(file: string): string {
  let stat: fs.Stats;
  try {
    stat = fs.statSync(file);
  } catch (e) {
    throw new Error(`--token-file ${file}: ${(e as NodeJS.ErrnoException).code === "ENOENT" ? "no such file" : (e as Error).message}`);
  }
  if (!stat.isFile()) throw new Error(`--token-file ${file}: not a regular file`);
  if ((stat.mode & 0o077) !== 0) throw new Error(`--token-file ${file}: readable or writable by others (mode ${(stat.mode & 0o777).toString(8)}); chmod 600 it and mint a new token, this one may have leaked`);
  return fs.readFileSync(file, "utf8").trim();
}
