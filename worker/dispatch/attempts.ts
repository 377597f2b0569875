import type { TaskDone } from "./outcomes.js";
import type { WorkRow } from "./queue.js";

/**
 * Work is assigned at most this often. Each time its agent went away without reporting (crash,
 * network, a frame too large for the socket), it was put back in the queue; work that keeps taking
 * its agent down must not run again forever, so after the last attempt it fails instead.
 */
export const MAX_ATTEMPTS = 3;

export const abandonedReason = (w: WorkRow) =>
  `given up after ${w.attempts} attempts: each time, the agent running it disconnected before reporting an outcome`;

/** The outcome the dispatcher records for an abandoned task: 500, with the reason in its body and log. */
export const abandonedReport = (w: WorkRow): TaskDone => dispatcherFailure(w.id, "agent_lost", `the task was ${abandonedReason(w)}`);

/** A task the dispatcher ends itself: 500, the message in its body and log. */
export function dispatcherFailure(taskId: string, code: string, message: string): TaskDone {
  return {
    type: "task.done",
    taskId,
    status: 500,
    headers: { "content-type": "application/json" },
    body: btoa(JSON.stringify({ error: { code, message } })),
    bodyUploaded: false,
    log: [`[dispatcher] ${message}`],
    logUploaded: false,
    durationMs: 0,
  };
}
