import type { Lang } from "../runtimes/languages.js";

/**
 * What a pooled container of each language runs before it knows its function. The interpreted
 * languages start their shim in pool mode; Go and Rust compile shim and function into one binary per
 * function, so a small loader waits for the init and execs it; C#'s loader starts Mono and runs the
 * function's handler.exe in it. docs/runtimes.md, "Pool mode", has the init exchange.
 */
export const POOL_COMMAND: Record<Lang, string[]> = {
  py: ["python3", "/opt/gcfaas/shim.py"],
  js: ["node", "/opt/gcfaas/shim.js"],
  rb: ["ruby", "/opt/gcfaas/shim.rb"],
  go: ["/opt/gcfaas/loader"],
  rs: ["/opt/gcfaas/loader"],
  cs: ["mono", "/opt/gcfaas/loader.exe"],
};
