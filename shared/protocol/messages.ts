import { z } from "zod";
import { taskInput as taskInputSchema } from "../schemas/task.js";

/**
 * The agent ↔ dispatcher wire protocol: JSON text frames over one WebSocket, each a member of a
 * discriminated union on `type`. Both sides parse every frame with these schemas and drop (and log)
 * what does not parse, so a bad frame never takes a connection or a queue down.
 */
export const PROTOCOL_VERSION = 1;

const id = z.string().regex(/^[a-z0-9]{1,64}$/);
const lang = z.enum(["go", "py", "js", "cs", "rb", "rs"]);
/** A compute host's id; an agent token is bound to one (POST /v1/admin/agent-tokens). */
export const nodeId = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "must be 1-64 of A-Z a-z 0-9 . _ -");

export const capabilities = z.object({
  timeout: z.int().min(1).max(3600),
  cpuCount: z.number().min(0).max(64),
  memSize: z.int().min(0).max(1 << 20),
  privileged: z.boolean(),
});
export type TaskCapabilities = z.infer<typeof capabilities>;

export const warmRef = z.object({ functionId: id, buildId: id });

// ── agent → dispatcher ─────────────────────────────────────────────────────────────────────────

export const hello = z.object({
  type: z.literal("hello"),
  version: z.literal(PROTOCOL_VERSION),
  /** Must be the node id the connection's token is bound to, or the dispatcher closes the socket. */
  nodeId,
  cpus: z.number().positive().max(1024),
  memMiB: z.int().positive(),
  privileged: z.boolean(),
  langs: z.array(lang).max(6),
  slots: z.int().min(0).max(1024),
  /** Builds the node runs at once (each counts in `slots` too); absent: no limit but `slots`. */
  builds: z.int().min(1).max(1024).optional(),
  /** Work the agent is still running from before a reconnect: it keeps it and reports it. */
  running: z.array(z.object({ kind: z.enum(["task", "build"]), id })).max(1024),
  warm: z.array(warmRef).max(1024),
  /** Shown in the fleet list; optional so that older agents still say hello (`version` is the protocol's). */
  agentVersion: z.string().max(64).optional(),
  /** The container runtime functions run under on this node, e.g. runc or runsc. */
  runtime: z.string().max(32).optional(),
});

export const heartbeat = z.object({
  type: z.literal("heartbeat"),
  free: z.int().min(0).max(1024),
  warm: z.array(warmRef).max(1024),
  draining: z.boolean(),
});

export const pong = z.object({ type: z.literal("pong"), t: z.number() });

export const buildStarted = z.object({ type: z.literal("build.started"), buildId: id });
/** `first` numbers the first line (from 0): a batch re-sent after a reconnect is stored once. */
export const buildLog = z.object({
  type: z.literal("build.log"),
  buildId: id,
  first: z.int().min(0).max(10_000_000),
  lines: z.array(z.string().max(8192)).max(1000),
});
export const buildDone = z.object({
  type: z.literal("build.done"),
  buildId: id,
  ok: z.boolean(),
  /** Set when ok: the artifact was uploaded to the artifact URL first. */
  artifactSize: z.int().min(0).optional(),
  reason: z.string().max(4096).optional(),
});

export const taskDone = z.object({
  type: z.literal("task.done"),
  taskId: id,
  status: z.int().min(100).max(599),
  headers: z.record(z.string().max(256), z.string().max(8192)),
  /** base64 of the body when it is small; otherwise it was PUT to the result URL first. */
  body: z.string().max(1_400_000).nullable(),
  bodyUploaded: z.boolean(),
  log: z.array(z.string().max(8192)).max(10_000),
  durationMs: z.int().min(0),
});

export const agentMessage = z.discriminatedUnion("type", [hello, heartbeat, pong, buildStarted, buildLog, buildDone, taskDone]);
export type AgentMessage = z.infer<typeof agentMessage>;

// ── dispatcher → agent ─────────────────────────────────────────────────────────────────────────

export const welcome = z.object({ type: z.literal("welcome"), heartbeatMs: z.int().positive(), shard: z.string() });
export const ping = z.object({ type: z.literal("ping"), t: z.number() });

export const buildAssign = z.object({
  type: z.literal("build.assign"),
  buildId: id,
  functionId: id,
  lang,
  /** Paths on the control plane, fetched with the agent token. */
  sourcePath: z.string(),
  artifactPath: z.string(),
});

export { taskInput } from "../schemas/task.js";

export const taskAssign = z.object({
  type: z.literal("task.assign"),
  taskId: id,
  functionId: id,
  buildId: id,
  lang,
  capabilities,
  artifactPath: z.string(),
  /** Inline input, or null when it must be fetched from `inputPath`. */
  input: taskInputSchema.nullable(),
  inputPath: z.string(),
  resultPath: z.string(),
});

export const taskCancel = z.object({ type: z.literal("task.cancel"), taskId: id });

export const dispatcherMessage = z.discriminatedUnion("type", [welcome, ping, buildAssign, taskAssign, taskCancel]);
export type DispatcherMessage = z.infer<typeof dispatcherMessage>;

/** Parses one text frame; undefined when it is not JSON or not a known message. */
export function parseFrame<S extends z.ZodType>(schema: S, data: string | ArrayBuffer): z.output<S> | undefined {
  if (typeof data !== "string") return undefined;
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    return undefined;
  }
  const r = schema.safeParse(json);
  return r.success ? r.data : undefined;
}
