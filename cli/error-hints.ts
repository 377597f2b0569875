import { cmd } from "./cli-name.js";

/**
 * The next step after an API error, as a command or console action. The API's own messages may
 * name its routes (they are written for HTTP clients); the CLI user needs the tool in hand.
 */
export function hintFor(code: string): string | undefined {
  switch (code) {
    case "unauthorized":
      return `check the token with \`${cmd("config")}\`, or log in with \`${cmd("login --url URL --token TOKEN")}\``;
    case "no_successful_build":
      return `deploy it with \`${cmd("deploy <folder>")}\`; see why its last build failed with \`${cmd("builds --function <function>")}\``;
    case "egress_not_allowed":
      return `the operator grants it with \`${cmd("accounts grant <account-id> --egress true")}\` (the admin token); until then \`${cmd("network <function> none")}\``;
    case "function_paused":
      return `resume it with \`${cmd("resume <function>")}\``;
    case "quota_exhausted":
      return "this period's invocations are used up; see the account's usage and plan in the console (Billing)";
    case "too_many_pending_tasks":
      return `wait for pending tasks to finish; \`${cmd("tasks")}\` lists them`;
    case "idempotency_conflict":
      return "a different call needs a key of its own: give another --idempotency-key (or none)";
    case "not_found":
      return `list what exists with \`${cmd("list")}\` (functions), \`${cmd("builds")}\` or \`${cmd("tasks")}\``;
    default:
      return undefined;
  }
}

/** The API's message without a clause that tells an HTTP client which route to call. */
export function withoutRoutes(message: string): string {
  return message.replace(/\s*[:;]\s*[^:;]*\b(?:GET|POST|PUT|PATCH|DELETE) \/v1\/.*$/s, "");
}
