import type { TaskDone } from "./outcomes.js";
import type { Grant } from "./revoked-grants.js";

/**
 * The outcome the dispatcher records for a task it ends itself, without an agent's report: the
 * status, an error body in the API's shape (so a synchronous caller reads why) and one log line.
 */
export function verdictReport(taskId: string, status: number, code: string, message: string): TaskDone {
  return {
    type: "task.done",
    taskId,
    status,
    headers: { "content-type": "application/json" },
    body: btoa(JSON.stringify({ error: { code, message } })),
    bodyUploaded: false,
    log: [`[dispatcher] ${message}`],
    logUploaded: false,
    durationMs: 0,
  };
}

/** A task no node of the fleet could take (fleet-reach.ts): 503, instead of waiting for ever. */
export const unreachableReport = (taskId: string, reason: string) =>
  verdictReport(taskId, 503, "no_suitable_node", `the task did not run: ${reason}`);

const REVOKED: Record<Grant, { code: string; what: string }> = {
  privileged: { code: "privileged_not_allowed", what: "run privileged functions" },
  egress: { code: "egress_not_allowed", what: "let functions reach the network" },
};

/** A task that needs a grant the operator revoked from its account (revoked-grants.ts). */
export const grantRevokedReport = (grant: Grant, taskId: string) =>
  verdictReport(taskId, 403, REVOKED[grant].code, `the task did not run (or was stopped): the operator revoked this account's permission to ${REVOKED[grant].what}`);
