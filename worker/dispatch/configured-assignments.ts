import { TaskConfigs, withConfig } from "../function-config/task-configs.js";
import type { TaskConfig } from "../../shared/schemas/function-config.js";
import type { WorkRow } from "./queue.js";
import { isStorageUnavailable } from "../db/unavailable.js";

/** The agent a task goes to, as far as sending its configuration goes. */
interface Recipient {
  nodeId: string;
  configs?: boolean;
}

interface Pending {
  w: WorkRow;
  to: Recipient;
  payload: string;
  /** When it was assigned: a flush sends it only if it is still that assignment. */
  at: number;
}

/** What the dispatcher lends: whether work is still assigned as it was, sending, failing. */
export interface AssignmentHost {
  stillAssigned(taskId: string, nodeId: string, at: number): boolean;
  send(nodeId: string, frame: string): void;
  /** The assignment went out (live log followers start with it). */
  sent(w: WorkRow, nodeId: string): void;
  fail(w: WorkRow, reason: string): void;
  /** The configuration could not be read because D1 is unreachable: the task waits to be assigned again. */
  later(w: WorkRow): void;
}

/**
 * Task assignments leaving with their function's configuration (variables and secrets), added to
 * the frame as it is sent and never stored. A configuration in memory goes at once; the others are
 * read from D1 (secrets opened) after the pump's synchronous step, and sent only if the task is
 * still assigned to the same node as then.
 */
export class ConfiguredAssignments {
  private pending: Pending[] = [];

  constructor(
    readonly configs: TaskConfigs,
    private readonly host: AssignmentHost,
  ) {}

  /** Sends now (through `deliver`, the pump's socket) when the configuration is in memory; otherwise keeps it for `flush`. */
  send(w: WorkRow, to: Recipient, payload: string, deliver: (frame: string) => void, at: number): void {
    const config = this.configs.cached(w.function_id);
    if (config) this.sendWith(w, to, payload, config, deliver);
    else this.pending.push({ w, to, payload, at });
  }

  /**
   * Sends what waited for its configuration. Pumps overlap (one awaits D1 while the next assigns),
   * and a flush takes every assignment kept so far, each checked against its own assignment time.
   */
  async flush(): Promise<void> {
    const pending = this.pending.splice(0);
    if (pending.length === 0) return;
    const loaded = new Map<string, Promise<TaskConfig | Error>>();
    for (const { w } of pending) if (!loaded.has(w.function_id)) loaded.set(w.function_id, this.configs.fetch(w.function_id).catch((e: Error) => e));
    for (const { w, to, payload, at } of pending) {
      const config = await loaded.get(w.function_id)!;
      // Requeued, reassigned or cancelled while D1 answered: whoever holds it now sends it.
      if (!this.host.stillAssigned(w.id, to.nodeId, at)) continue;
      // D1 down is no reason for a task to fail: it waits for D1 as it would for a free slot.
      if (config instanceof Error && isStorageUnavailable(config)) this.host.later(w);
      else if (config instanceof Error) this.host.fail(w, "its configuration could not be read");
      else this.sendWith(w, to, payload, config, (frame) => this.host.send(to.nodeId, frame));
    }
  }

  private sendWith(w: WorkRow, to: Recipient, payload: string, config: TaskConfig, deliver: (frame: string) => void): void {
    const frame = withConfig(payload, config);
    if (frame === undefined) this.host.fail(w, "its configuration does not fit the assignment frame");
    // An agent from before configuration would run the function without it, unseen.
    else if (frame !== payload && !to.configs) this.host.fail(w, `node ${to.nodeId} runs an agent too old for environment variables and secrets; upgrade it`);
    else {
      deliver(frame);
      this.host.sent(w, to.nodeId);
    }
  }
}
