import { z } from "zod";
import { capabilitiesOut, functionGetOut, functionListItem } from "./function.js";
import { envelope, tagOut } from "./common.js";
import { timelineEntry } from "./build.js";

/**
 * Response shapes of the API, for the OpenAPI document and for clients (the CLI parses with them).
 * Timestamps: "Unix time in seconds, as a string" fields are strings of digits; ISO fields are
 * ISO 8601 UTC; what has not happened yet is null.
 */
const unixSeconds = z.string().regex(/^\d+$/).nullable();
const isoTime = z.iso.datetime().nullable();

export const created = z.object({ id: z.string() });

export const errorBody = z.object({
  error: z.object({
    code: z.string(),
    message: z.string(),
    details: z.array(z.object({ field: z.string(), message: z.string() })).optional(),
  }),
});

export const tagList = z.array(tagOut);

const triggerFields = {
  id: z.string(),
  functionId: z.string(),
  nextId: z.string(),
  tags: z.array(tagOut),
  status: z.int(),
  includeResult: z.boolean(),
  createdAt: isoTime,
};
export const triggerGet = z.object({ ...triggerFields, description: z.string() });
export const triggerList = envelope(z.object(triggerFields));

export const timeLimitOut = z.object({ from: z.string(), to: z.string(), timezone: z.string() }).nullable();
export const endpointGet = z.object({
  id: z.string(),
  functionId: z.string(),
  description: z.string(),
  tags: z.array(tagOut),
  dailyLimit: z.int(),
  origin: z.array(z.string()),
  ip: z.array(z.string()),
  timeLimit: timeLimitOut,
  createdAt: isoTime,
});
export const endpointList = envelope(z.object({ id: z.string(), functionId: z.string(), description: z.string(), tags: z.array(tagOut), createdAt: isoTime }));
const scheduledFields = {
  id: z.string(),
  active: z.boolean(),
  functionId: z.string(),
  cron: z.string(),
  timezone: z.string(),
  description: z.string(),
};
/** A schedule's payload: the query string, the body as base64, and its Content-Type. */
export const inlinePayload = z.object({ query: z.string(), body: z.string(), contentType: z.string().nullable() }).nullable();
export const scheduledGet = z.object({ ...scheduledFields, inlinePayload, createdAt: isoTime });
export const scheduledList = envelope(z.object(scheduledFields));

/** GET /v1/metrics: the caller's tasks and builds, the fleet's nodes (all integers). */
export const platformMetrics = z.object({
  pendingTasks: z.int(),
  pendingBuilds: z.int(),
  activeNodes: z.int(),
  freeNodes: z.int(),
  busyNodes: z.int(),
  todayTasks: z.int(),
  completedTasks: z.int(),
});
export type PlatformMetrics = z.infer<typeof platformMetrics>;

export const endpointMetrics = z.object({ todayTasks: z.int(), pendingTasks: z.int(), weekTasks: z.int() });

export const buildGet = z.object({
  id: z.string(),
  functionId: z.string(),
  status: z.enum(["PENDING", "BUILDING", "SUCCESS", "FAILED"]),
  arch: z.array(z.literal("amd64")),
  timeline: z.array(timelineEntry),
  /** The first and last lines, with one line `… N lines cut …` between them when more were printed (shared/build-log.ts). */
  log: z.array(z.string()),
  /** How many lines the build printed in all, cut ones included. */
  logLines: z.int().min(0),
  createdAt: isoTime,
  /** When its zip and artifact were deleted (only the last `artifactsKept` successful builds keep theirs); null while kept. */
  evictedAt: isoTime.nullable(),
});
export const buildList = envelope(buildGet.pick({ id: true, functionId: true, status: true, createdAt: true }));

export const taskGet = z.object({
  id: z.string(),
  functionId: z.string(),
  buildId: z.string().nullable(),
  issued: unixSeconds,
  assigned: unixSeconds,
  finished: unixSeconds,
  progress: z.int().min(0).max(100),
  status: z.int(),
  node: z.string().nullable(),
  timeout: z.int(),
  capabilities: capabilitiesOut.omit({ timeout: true }),
  endpointId: z.string().nullable(),
  triggerId: z.string().nullable(),
  parentTaskId: z.string().nullable(),
  runtime: z.string().nullable(),
  scheduledId: z.string().nullable(),
  /** The function's response headers (GC-Storage taken off); null until finished and after retention. */
  responseHeaders: z.record(z.string(), z.string()).nullable(),
  attempts: z.int().min(0).describe("Attempts run so far; result and status are the last one's"),
});
export const taskList = z.array(z.object({ id: z.string(), issued: unixSeconds, progress: z.int(), status: z.int() }));
export const taskPending = z.object({ status: z.literal(0), progress: z.int() });
export const taskLog = z.object({ id: z.string(), finished: z.boolean(), log: z.array(z.string()) });

export const invoiceGet = z.object({
  id: z.string(),
  amount: z.number(),
  description: z.string(),
  status: z.enum(["open", "succeeded", "failed", "void"]),
  paidDay: z.int().nullable(),
  payment: z.object({ card: z.object({ brand: z.string(), last4: z.string() }), receiptUrl: z.string() }).nullable(),
});
export const invoiceList = z.array(z.object({ id: z.string(), amount: z.number(), status: z.string(), paidDay: unixSeconds }));

export const functionList = z.array(functionListItem);
export { capabilitiesOut, functionGetOut };

export const accountCreated = z.object({ accountId: z.string(), tokenId: z.string(), token: z.string() });
export const tokenCreated = z.object({ tokenId: z.string(), token: z.string() });
export const agentTokenCreated = tokenCreated.extend({ nodeId: z.string() });

/** A node of the fleet: live figures while it is connected (summed over shards), its last report otherwise. */
export const fleetNode = z.object({
  id: z.string(),
  agentVersion: z.string().nullable(),
  runtime: z.string().nullable(),
  connected: z.boolean(),
  slots: z.int(),
  busySlots: z.int(),
  langs: z.array(z.string()),
  privileged: z.boolean(),
  /** Its agent runs functions that reach the network (started with --egress). */
  egress: z.boolean(),
  rttMs: z.number().nullable(),
  connectedSince: isoTime,
  lastSeen: isoTime,
  draining: z.boolean(),
  disabled: z.boolean(),
});
export const fleetList = z.array(fleetNode);
