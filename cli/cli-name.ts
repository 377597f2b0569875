import { accessSync, constants } from "node:fs";
import path from "node:path";
import type { Env } from "./config-store.js";

let name = "gcfaas";

/**
 * How the user can run this tool again: `gcfaas` when a `gcfaas` is on their PATH (after
 * `npm install -g`), else `npx gcfaas` (inside the repository). Hints print commands with it, so
 * that a newcomer can paste them as they are.
 */
export function detectCliName(env: Env): string {
  const dirs = (env.PATH ?? "").split(path.delimiter).filter(Boolean);
  const onPath = dirs.some((d) => {
    try {
      accessSync(path.join(d, "gcfaas"), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
  name = onPath ? "gcfaas" : "npx gcfaas";
  return name;
}

/** `gcfaas <rest>` as the user can run it. */
export function cmd(rest: string): string {
  return `${name} ${rest}`;
}

/** Rewrites the `gcfaas ` commands a hint or note names into the form the user can run. */
export function runnable(text: string): string {
  // `npx gcfaas` already written stays as it is.
  return name === "gcfaas" ? text : text.replace(/(^|[`\s(:])(?<!npx )gcfaas /g, `$1${name} `);
}
