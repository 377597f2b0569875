import { pickAgent, type AgentState } from "./agents.js";
import type { AgentSockets } from "./agent-sockets.js";
import type { AssignedMarks } from "./assigned-marks.js";
import { BuildLimits } from "./build-limits.js";
import { ConfiguredAssignments } from "./configured-assignments.js";
import { log } from "./dispatcher-log.js";
import type { GroupCommit } from "./group-commit.js";
import type { LogFollows } from "./log-follows.js";
import { verdictReport } from "./verdicts.js";
import type { WorkEndings } from "./work-endings.js";
import type { WorkQueue, WorkRow } from "./queue.js";
import { agentPaths } from "./work.js";
import type { ConcurrencyCaps } from "../concurrency/caps.js";
import type { TaskConfigs } from "../function-config/task-configs.js";
import type { Retries } from "../retries/retries.js";
import { withStorage, type DispatcherStorage } from "../storage/dispatcher-store.js";
import type { HeldTasks } from "../task-life/held-tasks.js";

/** Past a task's own timeout, how long the dispatcher waits for the agent's 504 before giving its own. */
const TASK_GRACE_MS = 30_000;

/** What assigning work uses of its shard. */
export interface PumpParts {
  sockets: AgentSockets;
  queue: WorkQueue;
  caps: ConcurrencyCaps;
  configs: TaskConfigs;
  storage: DispatcherStorage;
  held: HeldTasks;
  marks: AssignedMarks;
  follows: LogFollows;
  retries: Retries;
  endings: WorkEndings;
  commits: GroupCommit;
  scheduleAlarm(): Promise<void>;
}

/** The shard's assignment of waiting work to its connected agents. */
export class Pump {
  private readonly assignments: ConfiguredAssignments;

  constructor(private readonly parts: PumpParts) {
    const { queue, sockets, follows, retries, endings, commits } = parts;
    this.assignments = new ConfiguredAssignments(parts.configs, {
      stillAssigned: (taskId, nodeId, at) => {
        const w = queue.get(taskId);
        return w?.node === nodeId && w.assigned_at === at;
      },
      send: (nodeId, frame) => sockets.sendRawTo(nodeId, frame),
      sent: (w, nodeId) => follows.assigned(w, nodeId, retries.runs.get(w.id)?.attempt),
      // Rather than run the function without the variables it expects, the task fails with the reason.
      fail: (w, reason) => {
        log("error", "a task's configuration could not go with it; the task fails", { taskId: w.id, reason });
        endings.accept(w, verdictReport(w.id, 500, "config_unavailable", `the task did not run: ${reason}`), Date.now(), 0);
        void commits.run();
      },
      later: (w) => {
        log("warn", "a task's configuration could not be read (D1 unreachable); the task waits", { taskId: w.id });
        queue.handBack(w.id);
        void parts.scheduleAlarm();
      },
    });
  }

  /** Assigns waiting work to agents with free slots. Storage first, then messages, then D1. */
  async run(): Promise<void> {
    const { sockets, queue, caps, storage, held, marks, endings } = this.parts;
    const assignments = this.assignments;
    const connected = sockets.connected();
    const agents = connected.map((c) => c.state);
    // Work held by a node with no open socket goes back first: a close event is not the only way
    // a socket ends, and work must never wait on an agent that is gone.
    queue.requeueAbsent(agents.map((a) => a.nodeId));
    for (const w of queue.exhausted()) endings.abandon(w, Date.now());
    const busy = new Map(agents.map((a) => [a.nodeId, queue.countAssignedTo(a.nodeId)]));
    // Every agent full (the usual state under load): nothing to assign, no need to read the queue.
    if (!agents.some((a) => a.slots > busy.get(a.nodeId)!)) return;
    let free = agents.reduce((n, a) => n + Math.max(0, a.slots - busy.get(a.nodeId)!), 0);
    const assigned: { w: WorkRow; a: AgentState }[] = [];
    const builds = new BuildLimits(agents, () => agents.flatMap((a) => queue.assignedTo(a.nodeId)));
    const capped = caps.gate(queue.runningRows());
    for (const w of builds.window(queue.waiting(Infinity, capped?.held))) {
      const a = pickAgent(builds.eligible(w), w, busy);
      if (!a) continue;
      builds.assigned(w, a);
      capped?.took(w);
      busy.set(a.nodeId, (busy.get(a.nodeId) ?? 0) + 1);
      assigned.push({ w, a });
      if (--free === 0) break; // the rest of the queue waits; no need to read it
    }
    const now = Date.now();
    for (const { w, a } of assigned) {
      const queued = queue.assign(w.id, a.nodeId, now, now + w.timeout_s * 1000 + TASK_GRACE_MS);
      if (queued === undefined) continue;
      // The payload is the frame, serialized once when queued; a task gets its function's storage
      // and configuration as they are now, the configuration only in this frame, never stored.
      const deliver = (frame: string) => {
        for (const c of connected) if (c.state === a) sockets.sendRaw(c.ws, frame);
      };
      if (w.kind === "task") assignments.send(w, a, withStorage(queued, storage.given(w.function_id, w.id, agentPaths.storage)), deliver, now);
      else deliver(queued);
    }
    if (assigned.length) await this.parts.scheduleAlarm();
    // A task created here shows its assignment from the shard (heldTask), and D1 gets it with the outcome.
    for (const { w, a } of assigned) if (w.kind === "task" && !held.has(w.id)) marks.add({ taskId: w.id, node: a.nodeId, rttMs: a.rttMs, at: now });
    await assignments.flush();
  }
}
