import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { chromium, type Browser } from "playwright-core";

/** Debian's Chromium (scripts/ensure-chromium.sh installs it); playwright cannot download its own here. */
export const CHROMIUM = process.env.GCFAAS_CHROMIUM ?? "/usr/bin/chromium";

/**
 * Headless Chromium with the flags this machine needs: no sandbox as root, and none of the
 * background connections a closed network refuses at every start.
 */
export async function launchBrowser(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: run scripts/ensure-chromium.sh`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      `--disk-cache-dir=${path.join(os.tmpdir(), "gcfaas-chromium-cache")}`,
    ],
  });
}
