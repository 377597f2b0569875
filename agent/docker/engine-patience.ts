import { log } from "../log.js";

/** How long a start step may wait on the Docker engine before the agent says so, and then how often. */
export const ENGINE_PATIENCE_MS = 10_000;

/**
 * Waits for `work`, a start step that talks to the Docker engine, and says so in the log while it
 * is pending. A wedged dockerd answers some calls (`docker ps`) and never others (`docker network
 * ls`); the agent then waits for ever, and without these lines its operator (or a test) saw no
 * output at all. It keeps waiting: a restart would wait on the same engine.
 */
export async function awaitEngine<T>(step: string, work: Promise<T>, everyMs = ENGINE_PATIENCE_MS): Promise<T> {
  const started = Date.now();
  const timer = setInterval(() => {
    const seconds = Math.round((Date.now() - started) / 1000);
    log("warn", `still waiting for the Docker engine: ${step}`, { seconds, hint: "if `docker info` or `docker network ls` hangs too, restart dockerd" });
  }, everyMs);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}
