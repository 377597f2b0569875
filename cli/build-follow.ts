import { setTimeout as sleep } from "node:timers/promises";
import { ok, type ApiClient } from "./api-client.js";
import type { Context } from "./command.js";
import { CliError } from "./errors.js";
import { Progress } from "./output.js";
import { cutMarker } from "../shared/build-log.js";
import type { Answer } from "../client/index.js";

/** A build as `GET /v1/build/{id}` answers it. */
export type Build = Answer<"/v1/build/{id}", "get">;

/**
 * The lines of `b.log` numbered from `seen` on, and the new `seen`. The record carries a long log's
 * first and last lines with one marker line between them (shared/build-log.ts); lines that fell
 * into the cut between two polls are shown as one marker of their own.
 */
export function linesAfter(b: { log: string[]; logLines?: number }, seen: number): { lines: string[]; seen: number } {
  const log = Array.isArray(b.log) ? b.log : [];
  const total = b.logLines ?? log.length;
  const cut = total - (log.length - 1);
  const at = total > log.length ? log.indexOf(cutMarker(cut)) : -1;
  if (at < 0) return { lines: log.slice(seen), seen: Math.max(seen, log.length) };
  const tail = log.slice(at + 1);
  const tailFirst = total - tail.length;
  const lines = log.slice(seen, at);
  const missed = tailFirst - Math.max(seen, at);
  if (missed > 0) lines.push(cutMarker(missed));
  lines.push(...tail.slice(Math.max(0, seen - tailFirst)));
  return { lines, seen: Math.max(seen, total) };
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
      const b = await ok(api.GET("/v1/build/{id}", { params: { path: { id: buildId } } }));
      const next = linesAfter(b, seen);
      for (const line of next.lines) progress.log(line);
      seen = next.seen;
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
