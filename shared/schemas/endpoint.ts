import { z } from "zod";
import { intParam, printableAscii, recordId, tagRefs, unique } from "./common.js";

const hhmm = z.string({ error: "must be a time HH:MM" }).regex(/^([01]\d|2[0-3]):[0-5]\d$/, "must be a time HH:MM (00:00 to 23:59)");

export function isTimeZone(name: string): boolean {
  try {
    new Intl.DateTimeFormat("en-US", { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

export const timeLimit = z.strictObject({
  from: hhmm,
  to: hhmm,
  timezone: z.string({ error: "must be an IANA time-zone name" }).max(64).refine(isTimeZone, "must be an IANA time-zone name such as Europe/Paris").meta({ examples: ["UTC", "Europe/Paris"] }),
});
export type TimeLimit = z.infer<typeof timeLimit>;

/** An allowed origin: an https URL with nothing past the host (and port), as browsers send in `Origin`. */
const origin = z.string({ error: "must be a string" }).max(2048).check((ctx) => {
  let url: URL | undefined;
  try {
    url = ctx.value.startsWith("https://") ? new URL(ctx.value) : undefined;
  } catch {
    url = undefined;
  }
  if (!url || url.protocol !== "https:" || !url.hostname)
    ctx.issues.push({ code: "custom", input: ctx.value, message: "must be a URL starting with https://" });
  else if ((url.pathname !== "/" && url.pathname !== "") || url.search || url.hash || url.username || url.password)
    ctx.issues.push({ code: "custom", input: ctx.value, message: "must be an origin (https://host[:port]) with no path, query or credentials" });
}).meta({ examples: ["https://app.example.com"] });

const ipv4 = z.ipv4({ error: "must be an IPv4 address" });

const endpointFields = {
  description: printableAscii(256).optional(),
  tag: tagRefs.optional(),
  dailyLimit: z.int({ error: "must be an integer of at least -1" }).min(-1, "must be an integer of at least -1").max(1_000_000_000, "at most 1000000000").optional(),
  // Origins are matched with scheme and host case-insensitive and the default port ignored, so
  // "https://A.com" and "https://a.com:443/" are the same origin and count as a duplicate.
  origin: unique(origin, "origins", 100, (o) => new URL(o).origin).optional(),
  ip: unique(ipv4, "IPv4 addresses").optional(),
  timeLimit: timeLimit.nullable().optional(),
};

export const endpointCreate = z.strictObject(endpointFields);
export const endpointEdit = z.strictObject(endpointFields);
export type EndpointInput = z.infer<typeof endpointCreate>;

export const endpointListFilter = z.strictObject({
  page: intParam(1, undefined, 1),
  limit: intParam(3, 999, 10),
  functionId: recordId.optional(),
});
