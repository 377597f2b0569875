import { createHmac, randomBytes } from "node:crypto";

/**
 * Names a call's configuration in a warm container's key, in memory only. An HMAC under a key
 * drawn when the agent starts: a fingerprint says nothing about the secrets in it.
 */
const key = randomBytes(32);

export function configFingerprint(env: Record<string, string> | undefined): string {
  if (!env || Object.keys(env).length === 0) return "-";
  const sorted = Object.keys(env).sort().map((k) => [k, env[k]]);
  return createHmac("sha256", key).update(JSON.stringify(sorted)).digest("base64url").slice(0, 22);
}
