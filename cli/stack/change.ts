import type { ApiClient } from "../api-client.js";
import type { Context } from "../command.js";

/** What `up` does to one thing the file declares (or the service holds and the file does not). */
export type Verb = "create" | "update" | "rebuild" | "delete" | "unchanged" | "leave";

export interface Change {
  verb: Verb;
  kind: "function" | "build" | "capabilities" | "env" | "secret" | "endpoint" | "schedule" | "trigger";
  /** The function it belongs to (the file's name). */
  fn: string;
  /** The endpoint or schedule key, the secret's name, the trigger's `next/status`. */
  key?: string;
  /** The record's id on the service, once known. */
  id?: string;
  detail?: string;
  /** Makes the change; may return what to say once done (an address, a build id). */
  apply?: (run: ApplyContext) => Promise<string | void>;
}

/** What applying changes shares: the client, the ids of the file's functions as they are created. */
export interface ApplyContext {
  ctx: Context;
  api: ApiClient;
  ids: Map<string, string>;
  maxWaitSeconds: number;
}

/** Function id of `name` in the file, known once its `create` ran. */
export function idOf(run: ApplyContext, name: string): string {
  const id = run.ids.get(name);
  if (!id) throw new Error(`function ${name} has no id yet`);
  return id;
}

const PAST: Record<Verb, string> = { create: "created", update: "updated", rebuild: "rebuilt", delete: "deleted", unchanged: "unchanged", leave: "left alone" };

export function thing(c: Change): string {
  switch (c.kind) {
    case "function":
      return `function ${c.fn}`;
    case "build":
    case "capabilities":
    case "env":
      return `${c.kind} of ${c.fn}`;
    case "trigger": {
      // A declared trigger's key is `next/status`; one the file does not declare has only its id.
      const [next, status] = (c.key ?? "").split("/");
      return status ? `trigger ${c.fn} -> ${next} on ${status}` : `trigger ${c.fn}/${c.key ?? c.id}`;
    }
    default:
      return `${c.kind} ${c.fn}/${c.key ?? c.id ?? "?"}`;
  }
}

/** One line: `created   endpoint hello/public: http://…`; a dry run says what it would do. */
export function changeLine(c: Change, dryRun: boolean): string {
  const verb = dryRun ? (c.verb === "leave" ? "leave" : c.verb) : PAST[c.verb];
  return `${verb.padEnd(10)} ${thing(c)}${c.detail ? `: ${c.detail}` : ""}`;
}

/** `3 created, 1 rebuilt, 7 unchanged`, in a fixed order. */
export function summary(changes: readonly Change[], dryRun: boolean): string {
  const counts = new Map<Verb, number>();
  for (const c of changes) counts.set(c.verb, (counts.get(c.verb) ?? 0) + 1);
  const order: Verb[] = ["create", "update", "rebuild", "delete", "unchanged", "leave"];
  const parts = order.filter((v) => counts.get(v)).map((v) => `${counts.get(v)} ${dryRun ? `to ${v === "leave" ? "leave alone" : v}` : PAST[v]}`);
  const changing = changes.some((c) => c.verb !== "unchanged" && c.verb !== "leave");
  if (!changing) return `nothing to change (${parts.join(", ") || "the file declares nothing"})`;
  return dryRun ? `dry run, nothing changed: ${parts.join(", ")}` : parts.join(", ");
}

/** The `--json` form of a change. */
export function changeJson(c: Change): Record<string, unknown> {
  return { verb: c.verb, kind: c.kind, function: c.fn, ...(c.key ? { key: c.key } : {}), ...(c.id ? { id: c.id } : {}), ...(c.detail ? { detail: c.detail } : {}) };
}
