import { existsSync, readFileSync } from "node:fs";
import path from "node:path";

/**
 * The agent's version as the fleet list shows it: the release's VERSION file next to the bundled
 * gcfaas-agent.mjs (scripts/release-agent.sh writes "<package version>+<commit>"), or, run from a
 * checkout, the package version marked "+dev".
 */
function readVersion(): string {
  const release = path.join(import.meta.dirname, "VERSION");
  if (existsSync(release)) return readFileSync(release, "utf8").trim().slice(0, 64);
  const pkg = JSON.parse(readFileSync(path.resolve(import.meta.dirname, "../package.json"), "utf8")) as { version?: unknown };
  return `${typeof pkg.version === "string" ? pkg.version : "0.0.0"}+dev`.slice(0, 64);
}

export const AGENT_VERSION = readVersion();
