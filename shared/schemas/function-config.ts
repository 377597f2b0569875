import { z } from "zod";

/**
 * A function's configuration: environment variables (`GET|PUT /v1/function/<id>/env`) and secrets
 * (`/v1/function/<id>/secrets/<NAME>`). Both reach the function as process environment variables.
 */
export const MAX_ENV_VARS = 64;
/** UTF-8 bytes of every variable's name and value together. */
export const MAX_ENV_BYTES = 32 * 1024;
export const MAX_SECRETS = 32;
/** UTF-8 bytes of one secret's value. */
export const MAX_SECRET_BYTES = 16 * 1024;
/**
 * Bytes a function's variables and secrets together take in a task assignment frame (each name and
 * value JSON-encoded). 32 secrets of 16 KiB would not fit one frame (256 KiB, which also carries up
 * to 64 KiB of input and 48 KiB of storage inline): this keeps the whole configuration within it.
 */
export const MAX_CONFIG_FRAME_BYTES = 128 * 1024;

export const CONFIG_NAME_RULE = "must match [A-Za-z_][A-Za-z0-9_]{0,127}";
export const configName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, CONFIG_NAME_RULE);
/** Names the platform sets itself (GCFAAS_FUNCTION_ID, GC-Storage's kin): never a function's. */
export const RESERVED_PREFIXES = ["GC_", "GCFAAS_"] as const;
export const isReservedName = (name: string) => RESERVED_PREFIXES.some((p) => name.toUpperCase().startsWith(p));

const utf8Bytes = (s: string) => new TextEncoder().encode(s).byteLength;

export const configValue = z.string({ error: "must be a string" }).refine((v) => !v.includes("\0"), "must not contain NUL");

/** Checks one name: the pattern, then the reserved prefixes. */
function checkName(name: string): string | undefined {
  if (!configName.safeParse(name).success) return CONFIG_NAME_RULE;
  if (isReservedName(name)) return `must not start with ${RESERVED_PREFIXES.join(" or ")} (reserved)`;
  // JavaScript objects cannot hold it as an own key once parsed: it would vanish silently.
  if (name === "__proto__") return "is not allowed";
  return undefined;
}

/** GET /v1/function/<id>/env, and the shape of the PUT body (which `envSet` validates). */
export const envVars = z.record(configName, z.string());

/** PUT /v1/function/<id>/env: the whole set of variables. */
export const envSet = z
  .unknown()
  .superRefine((raw, ctx) => {
    // The names are checked on the parsed JSON itself: a record would drop some (`__proto__`) unseen.
    if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return;
    for (const name of Object.keys(raw)) {
      const problem = checkName(name);
      if (problem) ctx.addIssue({ code: "custom", path: [name], message: problem });
    }
  })
  .pipe(z.record(z.string(), configValue))
  .superRefine((vars, ctx) => {
    const names = Object.keys(vars);
    if (names.length > MAX_ENV_VARS) ctx.addIssue({ code: "custom", path: [], message: `holds ${names.length} variables; at most ${MAX_ENV_VARS}` });
    const bytes = names.reduce((n, k) => n + utf8Bytes(k) + utf8Bytes(vars[k]!), 0);
    if (bytes > MAX_ENV_BYTES) ctx.addIssue({ code: "custom", path: [], message: `holds ${bytes} bytes of names and values; at most ${MAX_ENV_BYTES}` });
  });
export type EnvVars = z.infer<typeof envSet>;

/** The `<NAME>` of a secret's path. */
export const secretName = z.string().superRefine((name, ctx) => {
  const problem = checkName(name);
  if (problem) ctx.addIssue({ code: "custom", message: problem });
});

/** PUT /v1/function/<id>/secrets/<NAME> */
export const secretSet = z.strictObject({
  value: configValue.refine((v) => utf8Bytes(v) <= MAX_SECRET_BYTES, `must be at most ${MAX_SECRET_BYTES} bytes`),
});

/** GET /v1/function/<id>/secrets: names and times, never values. */
export const secretListItem = z.object({ name: z.string(), updatedAt: z.string() });
export const secretList = z.array(secretListItem);

/** What one entry adds to a task frame: `"NAME":"value",` as JSON text. */
export const entryFrameBytes = (name: string, value: string) => utf8Bytes(JSON.stringify(name)) + utf8Bytes(JSON.stringify(value)) + 2;

/** What a task.assign frame carries (shared/protocol): the variables and the secrets, both plain. */
export const taskConfig = z.object({
  env: z.record(configName, z.string()),
  secrets: z.record(configName, z.string()),
});
export type TaskConfig = z.infer<typeof taskConfig>;
