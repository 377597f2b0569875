import { MAX_ZIP_BYTES } from "../../shared/schemas/build.js";
import { MAX_JSON_BYTES, MAX_TASK_BODY_BYTES } from "../../shared/schemas/task.js";
import { MAX_STORAGE_BYTES } from "../../shared/schemas/storage.js";
import { MAX_LOG_UPLOAD_BYTES } from "../../shared/protocol/messages.js";

const KiB = 1024;
const MiB = 1024 * KiB;

/** An agent's build artifact and a task's result, PUT to R2 with their length. */
export const MAX_ARTIFACT_BYTES = 512 * MiB;
export const MAX_RESULT_BYTES = 64 * MiB;
/** The payment provider's signed event. */
export const MAX_WEBHOOK_BYTES = 1 * MiB;
/** Sign-in and sign-out forms: a token, a path and a CSRF token. They are read before any session exists. */
export const MAX_SIGNIN_FORM_BYTES = 16 * KiB;
/** Other console forms (names, settings, environment); those carrying a task body get the task limit. */
export const MAX_CONSOLE_FORM_BYTES = 1 * MiB;
/** Anything not listed: routes that take no body. */
export const MAX_OTHER_BYTES = 64 * KiB;

export interface BodyRule {
  /** What the limit is for, for the error message and the docs. */
  what: string;
  limit: number;
}

type Rule = [method: string, path: RegExp, rule: BodyRule];

const seg = "[^/]+";
const route = (path: string) => new RegExp(`^${path.replaceAll(":id", seg)}$`);

/**
 * Every request body's limit, by route, first match wins: the one place that says how much any
 * route may be sent (docs/security.md lists it). `*` matches every method.
 */
const RULES: Rule[] = [
  ["POST", route("/v1/build/:id"), { what: "a build's zip", limit: MAX_ZIP_BYTES }],
  ["POST", route("/v1/task/:id"), { what: "a task's body", limit: MAX_TASK_BODY_BYTES }],
  ["PUT", route("/v1/scheduled/:id/payload"), { what: "a schedule's payload", limit: MAX_TASK_BODY_BYTES }],
  ["*", route("/gc/:id"), { what: "a task's body", limit: MAX_TASK_BODY_BYTES }],
  ["POST", route("/v1/billing/webhook"), { what: "a webhook event", limit: MAX_WEBHOOK_BYTES }],
  ["PUT", route("/v1/agent/builds/:id/artifact"), { what: "a build artifact", limit: MAX_ARTIFACT_BYTES }],
  ["PUT", route("/v1/agent/tasks/:id/result"), { what: "a task's result", limit: MAX_RESULT_BYTES }],
  ["PUT", route("/v1/agent/tasks/:id/storage/:id"), { what: "a storage value", limit: MAX_STORAGE_BYTES }],
  ["PUT", route("/v1/agent/tasks/:id/log"), { what: "a task's log", limit: MAX_LOG_UPLOAD_BYTES }],
  ["*", /^\/v1(\/.*)?$/, { what: "a JSON body", limit: MAX_JSON_BYTES }],
  ["POST", /^\/console\/sign(in|out)$/, { what: "a sign-in form", limit: MAX_SIGNIN_FORM_BYTES }],
  ["POST", route("/console/functions/:id/deploy"), { what: "a build's zip", limit: MAX_ZIP_BYTES }],
  ["POST", route("/console/functions/:id/invoke"), { what: "a task's body", limit: MAX_TASK_BODY_BYTES }],
  ["POST", route("/console/schedules/:id/payload"), { what: "a schedule's payload", limit: MAX_TASK_BODY_BYTES }],
  ["*", /^\/console(\/.*)?$/, { what: "a console form", limit: MAX_CONSOLE_FORM_BYTES }],
];

const OTHER: BodyRule = { what: "a request body", limit: MAX_OTHER_BYTES };

/** The body limit of a request, by its method and its path (without a trailing slash). */
export function bodyRuleFor(method: string, path: string): BodyRule {
  for (const [m, p, rule] of RULES) if ((m === "*" || m === method) && p.test(path)) return rule;
  return OTHER;
}

/** "10 MiB", "16 KiB": limits are whole multiples of either. */
export function sizeText(bytes: number): string {
  return bytes % MiB === 0 ? `${bytes / MiB} MiB` : `${Math.round(bytes / KiB)} KiB`;
}
