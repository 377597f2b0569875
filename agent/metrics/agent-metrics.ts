import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";
import type { AgentMessage } from "../../shared/protocol/messages.js";

/** What the gauges read at scrape time: the agent's own state, never a copy that could go stale. */
export interface AgentGaugeSource {
  slots(): number;
  busySlots(): number;
  runningBuilds(): number;
  warmContainers(): number;
  /** Ready containers of the runtime pool, per language. */
  pooledContainers(): Partial<Record<string, number>>;
  draining(): boolean;
}

export type WorkKind = "task" | "build";

/**
 * Failure kinds: a build that failed (the user's code or its dependencies), a task that timed out
 * (504), a task that answered another 5xx (a crash, out of memory, or the function's own 5xx), and
 * the agent itself failing to run work (also counted under its build or task kind).
 */
export const FAILURE_KINDS = ["build_failed", "task_timeout", "task_error", "agent_error"] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

// Tasks range from a warm call in milliseconds to the 15-minute timeout; builds from seconds
// (an interpreted language) to the tens of minutes a large Rust build may take.
const TASK_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900];
const BUILD_BUCKETS = [1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800];

/** One agent's Prometheus metrics, in a registry of its own (tests run several agents in one process). */
export class AgentMetrics {
  readonly registry = new Registry();
  private readonly taskSeconds: Histogram<"lang" | "status">;
  private readonly buildSeconds: Histogram<"lang" | "result">;
  private readonly failures: Counter<"kind">;

  constructor(source: AgentGaugeSource) {
    const registers = [this.registry];
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({ name, help, registers, collect() { this.set(read()); } });
    gauge("gcfaas_agent_slots", "Builds and tasks this node runs at once (0 while draining)", () => (source.draining() ? 0 : source.slots()));
    gauge("gcfaas_agent_slots_busy", "Builds and tasks running now", () => source.busySlots());
    gauge("gcfaas_agent_builds_running", "Builds holding a build slot now", () => source.runningBuilds());
    gauge("gcfaas_agent_warm_containers", "Function containers on this node, busy or idle", () => source.warmContainers());
    new Gauge({
      name: "gcfaas_agent_pooled_containers",
      help: "Pre-started runtime containers waiting for a function's first call, by language",
      labelNames: ["lang"],
      registers,
      collect() {
        this.reset();
        for (const [lang, n] of Object.entries(source.pooledContainers())) this.set({ lang }, n ?? 0);
      },
    });
    gauge("gcfaas_agent_draining", "1 while the agent finishes its work before stopping", () => (source.draining() ? 1 : 0));
    this.taskSeconds = new Histogram({
      name: "gcfaas_agent_task_duration_seconds",
      help: "Time from a task's assignment to its result, by language and status class",
      labelNames: ["lang", "status"],
      buckets: TASK_BUCKETS,
      registers,
    });
    this.buildSeconds = new Histogram({
      name: "gcfaas_agent_build_duration_seconds",
      help: "Time from a build's assignment to its outcome, waiting for a build slot included",
      labelNames: ["lang", "result"],
      buckets: BUILD_BUCKETS,
      registers,
    });
    this.failures = new Counter({ name: "gcfaas_agent_failures_total", help: "Failed work by kind", labelNames: ["kind"], registers });
    // Every kind is exported from the start, so that rate() sees the first failure as an increase.
    for (const kind of FAILURE_KINDS) this.failures.inc({ kind }, 0);
    collectDefaultMetrics({ register: this.registry });
  }

  /** Records the outcome report of one piece of work; other reports are ignored. */
  finished(lang: string, seconds: number, report: AgentMessage): void {
    if (report.type === "build.done") {
      this.buildSeconds.observe({ lang, result: report.ok ? "success" : "failure" }, seconds);
      if (!report.ok) this.failures.inc({ kind: "build_failed" });
    } else if (report.type === "task.done") {
      this.taskSeconds.observe({ lang, status: `${Math.floor(report.status / 100)}xx` }, seconds);
      if (report.status === 504) this.failures.inc({ kind: "task_timeout" });
      else if (report.status >= 500) this.failures.inc({ kind: "task_error" });
    }
  }

  failed(kind: FailureKind): void {
    this.failures.inc({ kind });
  }
}
