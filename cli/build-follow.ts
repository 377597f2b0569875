import { setTimeout as sleep } from "node:timers/promises";
import type { ApiClient } from "./api-client.js";
import type { Context } from "./command.js";
import { CliError } from "./errors.js";
import { Progress } from "./output.js";

export interface Build {
  id: string;
  functionId: string;
  status: "PENDING" | "BUILDING" | "SUCCESS" | "FAILED";
  arch: string[];
  timeline: { status: string; time: string }[];
  log: string[];
  createdAt?: string;
}

export const FINAL_BUILD_STATUSES = new Set(["SUCCESS", "FAILED"]);

/**
 * Polls a build until SUCCESS or FAILED, showing its status and each new log line on stderr (not
 * with `--json`). Ctrl-C stops following only: the build goes on in the service.
 */
export async function followBuild(ctx: Context, api: ApiClient, buildId: string, o: { maxWaitSeconds: number; intervalMs?: number }): Promise<Build> {
  const progress = new Progress(ctx.out.stderr, !ctx.out.json);
  const onInterrupt = () => {
    progress.stop(`stopped following; the build goes on. Follow it again with: gcfaas build ${buildId} --follow`);
    process.exit(130);
  };
  process.once("SIGINT", onInterrupt);
  progress.start();
  const deadline = Date.now() + o.maxWaitSeconds * 1000;
  let seen = 0;
  try {
    for (;;) {
      const b = await api.get<Build>(`/v1/build/${buildId}`);
      const log = Array.isArray(b.log) ? b.log : [];
      for (const line of log.slice(seen)) progress.log(line);
      seen = Math.max(seen, log.length);
      if (FINAL_BUILD_STATUSES.has(b.status)) {
        progress.stop(`build ${buildId}: ${b.status} after ${progress.elapsed()}`);
        return b;
      }
      progress.set(`build ${buildId}: ${b.status}`);
      if (Date.now() > deadline) {
        progress.stop();
        throw new CliError("wait_timeout", `build ${buildId} is still ${b.status} after ${o.maxWaitSeconds}s`, [], 1, `follow it with: gcfaas build ${buildId} --follow`);
      }
      await sleep(o.intervalMs ?? 500);
    }
  } finally {
    progress.stop();
    process.removeListener("SIGINT", onInterrupt);
  }
}
