import { z } from "zod";
import { alphanumeric, printableAscii } from "../../shared/schemas/common.js";
import { endpointCreate } from "../../shared/schemas/endpoint.js";
import { capabilityFields } from "../../shared/schemas/function.js";
import { envSet, secretName } from "../../shared/schemas/function-config.js";
import { scheduledCreate } from "../../shared/schemas/scheduled.js";
import { triggerCreate } from "../../shared/schemas/trigger.js";
import { LANG_CODES, parseLangCode, type LangCode } from "../langs.js";

/**
 * `gcfaas.yml`: the functions a project declares and what hangs off them. Each field reuses the
 * API's own schema, so the file accepts exactly what the service would; only the shapes that a
 * file needs differently (keys that name records, defaults spelled out) are new here.
 */

/** The key of an endpoint or schedule in the file; it is kept on the record (see `stackMarker`). */
export const recordKey = z.string({ error: "must be a string" }).regex(/^[A-Za-z0-9_-]{1,32}$/, "must be 1 to 32 letters, digits, _ or -");

/** Room left in a 256-character description once the marker is in front of it. */
const stackDescription = printableAscii(200);

const lang = z.string({ error: `must be one of ${LANG_CODES.join(", ")}` }).transform((v, ctx): LangCode => {
  try {
    return parseLangCode(v);
  } catch {
    ctx.issues.push({ code: "custom", input: v, message: `must be one of ${LANG_CODES.join(", ")}` });
    return z.NEVER;
  }
});

/** YAML reads `PORT: 8080` as a number: a variable's value is text, so scalars are taken as written. */
const envVars = z.preprocess((raw) => {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return raw;
  return Object.fromEntries(Object.entries(raw).map(([k, v]) => [k, typeof v === "number" || typeof v === "boolean" ? String(v) : v]));
}, envSet);

const { description: _d, tag: _t, ...endpointShape } = endpointCreate.shape;
/** A map's own message for a value that is no map; its keys and values keep theirs. */
const mapOf = (what: string) => ({ error: (iss: { code: string }) => (iss.code === "invalid_type" ? `must be a map of ${what}` : undefined) });

export const stackEndpoint = z.strictObject({ ...endpointShape, description: stackDescription.optional() });

export const stackSchedule = z.strictObject({
  cron: scheduledCreate.shape.cron,
  timezone: scheduledCreate.shape.timezone.default("UTC"),
  active: z.boolean({ error: "must be true or false" }).default(true),
  description: stackDescription.optional(),
});

export const stackTrigger = z.strictObject({
  /** A function of the file, or one the account has already. */
  next: alphanumeric,
  status: triggerCreate.shape.status,
  includeResult: z.boolean({ error: "must be true or false" }).default(false),
  description: triggerCreate.shape.description,
});

export const stackFunction = z.strictObject({
  lang,
  /** Relative to the stack file; default `./<name>`. */
  folder: z.string({ error: "must be a path" }).min(1, "must be a path").optional(),
  description: printableAscii(80).optional(),
  capabilities: z.strictObject(capabilityFields).optional(),
  env: envVars.optional(),
  /** Names only: values come from the environment of `gcfaas up`, never from the file. */
  secrets: z
    .array(secretName, { error: "must be a list of secret names" })
    .refine((names) => new Set(names).size === names.length, "names must be unique")
    .optional(),
  endpoints: z.record(recordKey, stackEndpoint, mapOf("endpoint names to endpoints")).optional(),
  schedules: z.record(recordKey, stackSchedule, mapOf("schedule names to schedules")).optional(),
  triggers: z
    .array(stackTrigger, { error: "must be a list of triggers" })
    .superRefine((ts, ctx) => {
      const seen = new Set<string>();
      ts.forEach((t, i) => {
        const key = `${t.next}/${t.status}`;
        if (seen.has(key)) ctx.addIssue({ code: "custom", path: [i], message: `a second trigger to ${t.next} on status ${t.status}; one is enough` });
        seen.add(key);
      });
    })
    .optional(),
});

export const stackFile = z.strictObject({
  version: z.literal(1, { error: "must be 1 (the only version so far)" }).optional(),
  functions: z.record(alphanumeric, stackFunction, mapOf("function names to functions")),
});

export type StackFile = z.output<typeof stackFile>;
export type StackFunction = z.output<typeof stackFunction>;
export type StackEndpoint = z.output<typeof stackEndpoint>;
export type StackSchedule = z.output<typeof stackSchedule>;
export type StackTrigger = z.output<typeof stackTrigger>;

/**
 * Endpoints and schedules have no name on the service: `up` keeps the file's key at the start of
 * the record's description (`gcfaas.yml:public`), which is how it finds them again and how the
 * console shows where they come from.
 */
export const stackMarker = (key: string, description?: string) => `gcfaas.yml:${key}${description ? ` ${description}` : ""}`;

/** The file's key of a record `up` made, or undefined for a record made otherwise. */
export function keyOfDescription(description: string): string | undefined {
  return /^gcfaas\.yml:([A-Za-z0-9_-]{1,32})(?: |$)/.exec(description)?.[1];
}
