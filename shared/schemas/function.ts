import { z } from "zod";
import { alphanumeric, printableAscii, tagOut, tagRefs } from "./common.js";

export const LANGS = ["GO", "PY", "JS", "CS", "RB", "RS"] as const;
export type Lang = (typeof LANGS)[number];

/** Input codes are uppercase; a lowercase code (the CLI's spelling) gets a pointed message. */
const langCode = z.string({ error: "must be a string" }).check((ctx) => {
  const v = ctx.value;
  if ((LANGS as readonly string[]).includes(v)) return;
  const hint = (LANGS as readonly string[]).includes(v.toUpperCase()) ? `; use ${v.toUpperCase()}` : "";
  ctx.issues.push({ code: "custom", input: v, message: `must be one of ${LANGS.join(", ")}${hint}` });
}).meta({ enum: [...LANGS] }); // the check is invisible to JSON Schema: the OpenAPI document shows the codes

const typeCode = z.string({ error: "must be a string" }).check((ctx) => {
  if (ctx.value === "DOCKER") return;
  const hint = ctx.value.toUpperCase() === "DOCKER" ? "; use DOCKER" : "";
  ctx.issues.push({ code: "custom", input: ctx.value, message: `must be DOCKER${hint}` });
}).meta({ enum: ["DOCKER"] });

export const functionCreate = z.strictObject({
  name: alphanumeric,
  description: printableAscii(80).optional(),
  tag: tagRefs.optional(),
  lang: langCode.transform((v) => v as Lang),
  type: typeCode,
});
export type FunctionCreate = z.infer<typeof functionCreate>;

export const functionEdit = z.strictObject({
  name: alphanumeric.optional(),
  description: printableAscii(80).optional(),
  tag: tagRefs.optional(),
});
export type FunctionEdit = z.infer<typeof functionEdit>;

export const CAPABILITY_DEFAULTS = {
  timeout: 30,
  cpuCount: 1,
  memSize: 256,
  networkLatency: 0,
  privileged: false,
} as const;

/**
 * Setting capabilities. `privilaged` (the requirements' spelling) is an alias of `privileged`;
 * `networkLatency` is measured by the dispatcher, so sending it is an error.
 */
/** The capabilities a caller may set, each optional (the CLI's stack file declares the same). */
export const capabilityFields = {
  timeout: z.int({ error: "must be an integer from 10 to 120 (seconds)" }).min(10, "must be an integer from 10 to 120 (seconds)").max(120, "must be an integer from 10 to 120 (seconds)").optional(),
  cpuCount: z.number({ error: "must be a number from 0 to 4" }).min(0, "must be a number from 0 to 4").max(4, "must be a number from 0 to 4").optional(),
  memSize: z.int({ error: "must be an integer from 0 to 2048 (MiB)" }).min(0, "must be an integer from 0 to 2048 (MiB)").max(2048, "must be an integer from 0 to 2048 (MiB)").optional(),
  privileged: z.boolean({ error: "must be a boolean" }).optional(),
};

export const capabilitiesSet = z
  .strictObject({
    ...capabilityFields,
    privilaged: z.boolean({ error: "must be a boolean" }).optional(),
    // readOnly: OpenAPI's word for "never sent in a request"; the refinement below answers 400.
    networkLatency: z.unknown().meta({ readOnly: true, description: "Measured by the service: sending it answers 400." }).optional(),
  })
  .superRefine((v, ctx) => {
    if (v.networkLatency !== undefined)
      ctx.addIssue({ code: "custom", path: ["networkLatency"], message: "is read-only: it is measured by the service" });
    if (v.privileged !== undefined && v.privilaged !== undefined && v.privileged !== v.privilaged)
      ctx.addIssue({ code: "custom", path: ["privilaged"], message: "contradicts privileged; send one of them" });
  })
  .transform(({ timeout, cpuCount, memSize, privileged, privilaged }) => ({
    timeout,
    cpuCount,
    memSize,
    privileged: privileged ?? privilaged,
  }));
export type CapabilitiesSet = z.infer<typeof capabilitiesSet>;

export const capabilitiesOut = z.object({
  timeout: z.int(),
  cpuCount: z.number(),
  memSize: z.int(),
  networkLatency: z.number(),
  privileged: z.boolean(),
});
export type CapabilitiesOut = z.infer<typeof capabilitiesOut>;

export const functionListQuery = z.strictObject({ tag: alphanumeric.optional() });

export const functionGetOut = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string(),
  type: z.literal("docker"),
  lang: z.enum(["go", "py", "js", "cs", "rb", "rs"]),
  tags: z.array(tagOut),
  capabilities: capabilitiesOut,
  metrics: z.object({
    todaysTasks: z.int(),
    pendingTasks: z.int(),
    weekTasks: z.int(),
    completedTasks: z.int(),
  }),
  paused: z.boolean(),
  createdAt: z.string(),
});

export const functionListItem = functionGetOut.pick({ id: true, name: true, description: true, lang: true, tags: true, createdAt: true });
