import type { TaskDone } from "./outcomes.js";
import type { WorkRow } from "./work-rows.js";
import { verdictReport } from "./verdicts.js";

/**
 * Work is assigned at most this often. Each time its agent went away without reporting (crash,
 * network, a frame too large for the socket), it was put back in the queue; work that keeps taking
 * its agent down must not run again forever, so after the last attempt it fails instead.
 */
export const MAX_ATTEMPTS = 3;

export const abandonedReason = (w: WorkRow) =>
  `given up after ${w.attempts} attempts: each time, the agent running it disconnected before reporting an outcome`;

/** The outcome the dispatcher records for an abandoned task: 500, with the reason in its body and log. */
export const abandonedReport = (w: WorkRow): TaskDone => verdictReport(w.id, 500, "agent_lost", `the task was ${abandonedReason(w)}`);
