import type { Db } from "../db/client.js";
import { artifactKey } from "../lib/storage-keys.js";
import type { AgentMessage } from "../../shared/protocol/messages.js";
import type { WorkQueue, WorkRow } from "./queue.js";
import { buildMoved } from "./records.js";
import { readEnds, writeEnds } from "../build-logs/ends.js";
import { appendToEnds, failureLine } from "../../shared/build-log.js";

type Report<T extends AgentMessage["type"]> = Extract<AgentMessage, { type: T }>;

/**
 * A dispatcher's build records: what agents report of their builds, and the failures the
 * dispatcher decides itself, written to D1 in the order they happened for each build. Frames are
 * handled concurrently (each awaits D1), and a build's end must not overtake its last log lines.
 */
export class BuildReports {
  /** The last record write of each build still being written. */
  private readonly writes = new Map<string, Promise<unknown>>();

  constructor(
    private readonly db: Db,
    private readonly queue: WorkQueue,
    /** Called once a build of the function has ended: frees what its older builds hold in R2. */
    private readonly ended: (accountId: string, functionId: string) => Promise<void>,
  ) {}

  started(msg: Report<"build.started">, now: number): Promise<void> {
    return this.inOrder(msg.buildId, () => buildMoved(this.db, msg.buildId, "BUILDING", now));
  }

  logged(msg: Report<"build.log">): Promise<void> {
    return this.inOrder(msg.buildId, async () => {
      if (this.queue.get(msg.buildId)) await this.logLines(msg.buildId, msg.first, msg.lines);
    });
  }

  /** The build's end as its agent reported it; true when it was still queued here (a slot is free now). */
  done(msg: Report<"build.done">, now: number): Promise<boolean> {
    return this.inOrder(msg.buildId, async () => {
      const w = this.queue.get(msg.buildId);
      if (!w) return false;
      if (!msg.ok) await this.logLines(w.id, undefined, [failureLine(msg.reason)]);
      await buildMoved(this.db, w.id, msg.ok ? "SUCCESS" : "FAILED", now, msg.ok ? artifactKey(w.account_id, w.function_id, w.id) : undefined);
      this.queue.remove(w.id);
      await this.ended(w.account_id, w.function_id);
      return true;
    });
  }

  /** A build the dispatcher gave up on (no result in time, its agent lost too often) leaves the queue failed. */
  failed(w: WorkRow, reason: string, now: number): Promise<void> {
    this.queue.remove(w.id);
    return this.inOrder(w.id, async () => {
      await this.logLines(w.id, undefined, [failureLine(reason)]);
      await buildMoved(this.db, w.id, "FAILED", now);
      await this.ended(w.account_id, w.function_id);
    });
  }

  /**
   * Adds lines to the build's bounded log row: numbered from `first` as the agent numbers them
   * (a batch sent again is taken once), or after every line so far (the dispatcher's own).
   */
  private async logLines(buildId: string, first: number | undefined, lines: string[]): Promise<void> {
    const before = await readEnds(this.db, buildId);
    const after = appendToEnds(before, first ?? before.lines, lines);
    if (JSON.stringify(after) === JSON.stringify(before)) return; // all of it was here already
    await writeEnds(this.db, buildId, after);
  }

  private inOrder<T>(buildId: string, write: () => Promise<T>): Promise<T> {
    const next = (this.writes.get(buildId) ?? Promise.resolve()).catch(() => undefined).then(write);
    this.writes.set(buildId, next);
    void next
      .finally(() => {
        if (this.writes.get(buildId) === next) this.writes.delete(buildId);
      })
      .catch(() => undefined);
    return next;
  }
}
