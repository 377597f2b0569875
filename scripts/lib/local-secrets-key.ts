import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";

/**
 * The SECRETS_KEY of a local Worker (worker/function-config/secret-box.ts): drawn once and kept in
 * its state folder, readable by the owner only, so that secrets set before a restart still open
 * after it. Production sets its own with `wrangler secret put SECRETS_KEY`.
 */
export async function localSecretsKey(stateDir: string): Promise<string> {
  const file = path.join(stateDir, "secrets-key");
  try {
    return (await fs.readFile(file, "utf8")).trim();
  } catch {
    const key = randomBytes(32).toString("base64url");
    await fs.writeFile(file, `${key}\n`, { mode: 0o600, flag: "wx" }).catch(() => undefined);
    return (await fs.readFile(file, "utf8")).trim();
  }
}
