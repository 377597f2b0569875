import { execFile } from "node:child_process";
import path from "node:path";
import { promisify } from "node:util";
import { assertDockerRunning, ensureOfflineImages } from "../../../agent/runtimes/images.js";
import type { Lang } from "../../../agent/runtimes/languages.js";

const run = promisify(execFile);
const ENSURE_DOCKER = path.resolve(import.meta.dirname, "../../../scripts/images/ensure-docker.sh");

let dockerReady: Promise<void> | null = null;

/**
 * Called from beforeAll of every suite: starts (or installs) Docker when needed and builds the
 * runtime images of `langs` that are missing or stale. Cheap when everything is in place.
 */
export async function ensureEnvironment(langs: readonly Lang[]): Promise<void> {
  dockerReady ??= (async () => {
    await run("bash", [ENSURE_DOCKER], { timeout: 600_000 });
    await assertDockerRunning();
  })();
  await dockerReady;
  await ensureOfflineImages(langs, (line) => console.log(`[images] ${line}`));
}
