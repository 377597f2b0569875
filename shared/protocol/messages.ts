import { z } from "zod";
import { taskInput as taskInputSchema } from "../schemas/task.js";
import { storageChange, storageGiven } from "../schemas/storage.js";
import { taskConfig } from "../schemas/function-config.js";

/**
 * The agent ↔ dispatcher wire protocol: JSON text frames over one WebSocket, each a member of a
 * discriminated union on `type`. Both sides parse every frame with these schemas and drop (and log)
 * what does not parse, so a bad frame never takes a connection or a queue down.
 */
export const PROTOCOL_VERSION = 2;

/**
 * No frame either side sends is larger than this (UTF-8 bytes of its JSON). Cloudflare closes a
 * WebSocket on a message over 1 MiB, and with it every report in flight on that socket: bodies
 * and logs that would not fit are uploaded over HTTP first (see agent/control/frame-budget.ts).
 */
export const FRAME_BUDGET_BYTES = 256 * 1024;
/** An uploaded task log (a JSON array of lines) is cut to this size by the agent. */
export const MAX_LOG_UPLOAD_BYTES = 16 * 1024 * 1024;
export const MAX_LOG_LINES = 10_000;
export const MAX_LOG_LINE_CHARS = 8192;
export const logLines = z.array(z.string().max(MAX_LOG_LINE_CHARS)).max(MAX_LOG_LINES);
/** Output the agent did not keep of a call's log: whole lines and their UTF-8 bytes (agent/runner/invocation-log.ts). */
export const logCut = z.object({ lines: z.int().min(0), bytes: z.int().min(0) });
export type LogCut = z.infer<typeof logCut>;

const id = z.string().regex(/^[a-z0-9]{1,64}$/);
const lang = z.enum(["go", "py", "js", "cs", "rb", "rs"]);
/** A compute host's id; an agent token is bound to one (POST /v1/admin/agent-tokens). */
export const nodeId = z.string().regex(/^[A-Za-z0-9._-]{1,64}$/, "must be 1-64 of A-Z a-z 0-9 . _ -");

export const capabilities = z.object({
  timeout: z.int().min(1).max(3600),
  cpuCount: z.number().min(0).max(64),
  memSize: z.int().min(0).max(1 << 20),
  privileged: z.boolean(),
  /**
   * The function reaches public addresses (api-decisions "Network egress"). Only sent to agents
   * whose hello says `egress: true`; absent means no network, as before egress existed.
   */
  egress: z.boolean().default(false),
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
  /** The operator started the agent with `--egress`: it runs functions that reach the network. */
  egress: z.boolean().optional(),
  langs: z.array(lang).max(6),
  slots: z.int().min(0).max(1024),
  /**
   * True: `slots` is this shard's share of the node's slots (slot-shares.ts). Absent (agents from
   * before shares): `slots` is the node's whole count, and the shard takes its share itself.
   */
  slotsShared: z.literal(true).optional(),
  /**
   * True: the agent hands a task's `config` (variables and secrets) to the function. Absent (agents
   * from before configuration): such an agent would drop it unseen, so a task that has one fails
   * there instead of running without it.
   */
  configs: z.literal(true).optional(),
  /**
   * True: the agent streams a followed task's output (`task.follow` / `task.log`). Absent (agents
   * from before live logs): followers of its tasks get the log when the task ends.
   */
  liveLogs: z.literal(true).optional(),
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
/**
 * `first` numbers the first line (from 0): a batch re-sent after a reconnect is stored once. The
 * agent sends a bounded part of a long log (shared/build-log.ts): numbers it skips are cut lines.
 */
export const buildLog = z.object({
  type: z.literal("build.log"),
  buildId: id,
  first: z.int().min(0).max(Number.MAX_SAFE_INTEGER),
  lines: z.array(z.string().max(MAX_LOG_LINE_CHARS)).max(1000),
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
  body: z.string().max(FRAME_BUDGET_BYTES).nullable(),
  bodyUploaded: z.boolean(),
  log: logLines,
  /** The log was PUT to the log URL first (`log` is then empty). */
  logUploaded: z.boolean().default(false),
  /** What was cut from the log, by the agent's bound on a call's output and by the frame budget (also its last lines' note). */
  logCut: logCut.optional(),
  durationMs: z.int().min(0),
  /** The response's GC-Storage header, taken off the recorded headers: set or clear the function's storage. */
  storage: storageChange.optional(),
  /** The container runtime the call ran under (runsc for gVisor, runc), recorded with the task. */
  runtime: z.string().max(32).optional(),
});

/** Most lines one `task.log` frame carries; its bytes stay within LIVE_LOG_FRAME_BYTES too. */
export const MAX_LIVE_LOG_LINES = 1000;
/**
 * Bytes of lines one `task.log` frame carries at most (JSON-escaped): well under the frame budget,
 * so a live batch never competes with a report for a frame's room.
 */
export const LIVE_LOG_FRAME_BYTES = 64 * 1024;

/**
 * A running task's new output while the dispatcher has it followed (see `task.follow`): lines
 * numbered from 0 within the call's log, `first` naming the first. Not a report: never
 * acknowledged nor re-sent (the finished log carries every line anyway). `cut` says lines past the
 * call's log bounds are no longer streamed.
 */
export const taskLog = z.object({
  type: z.literal("task.log"),
  taskId: id,
  first: z.int().min(0).max(MAX_LOG_LINES),
  lines: z.array(z.string().max(MAX_LOG_LINE_CHARS)).max(MAX_LIVE_LOG_LINES),
  cut: z.literal(true).optional(),
});

export const agentMessage = z.discriminatedUnion("type", [hello, heartbeat, pong, buildStarted, buildLog, buildDone, taskDone, taskLog]);
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
  /** Where the agent PUTs the build's whole log as text before build.done; absent in assignments queued before it. */
  logPath: z.string().optional(),
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
  /** Where a log too large for the report frame is PUT; absent in assignments queued before protocol 2. */
  logPath: z.string().optional(),
  /** Where a storage value too large for the report frame is PUT. */
  storagePath: z.string().optional(),
  /** The function's storage when the task was assigned (the request's GC-Storage header). */
  storage: storageGiven.optional(),
  /**
   * The function's environment variables and secrets, added as the frame is sent (never stored by
   * the dispatcher); absent when it has none. The agent holds them in memory for this call only.
   */
  config: taskConfig.optional(),
});

export const taskCancel = z.object({ type: z.literal("task.cancel"), taskId: id });

/**
 * Someone follows the task's log (`on`), or nobody does any more. On `on` the agent sends the
 * call's lines so far (from line 0), then new lines in batches at most every LIVE_LOG_BATCH_MS,
 * until `on: false` or the task ends. Only sent to agents whose hello says `liveLogs`.
 */
export const taskFollow = z.object({ type: z.literal("task.follow"), taskId: id, on: z.boolean() });
/** How long the agent gathers a followed task's new lines into one `task.log` frame. */
export const LIVE_LOG_BATCH_MS = 200;

/**
 * The dispatcher has taken a report for good (a task's outcome is in its durable log, a build's
 * record is written): the agent forgets it. Reports not yet acknowledged are sent again after a
 * reconnect; the dispatcher takes each once. `first` names a build.log batch.
 */
export const reportKind = z.enum(["task.done", "build.started", "build.log", "build.done"]);
export const ack = z.object({ type: z.literal("ack"), of: reportKind, id, first: z.int().min(0).optional() });

export const dispatcherMessage = z.discriminatedUnion("type", [welcome, ping, buildAssign, taskAssign, taskCancel, taskFollow, ack]);
export type DispatcherMessage = z.infer<typeof dispatcherMessage>;
export type Ack = z.infer<typeof ack>;

/** The acknowledgement that settles a report; undefined for frames that are not reports. */
export function ackFor(m: AgentMessage): Ack | undefined {
  switch (m.type) {
    case "task.done":
      return { type: "ack", of: m.type, id: m.taskId };
    case "build.log":
      return { type: "ack", of: m.type, id: m.buildId, first: m.first };
    case "build.started":
    case "build.done":
      return { type: "ack", of: m.type, id: m.buildId };
    default:
      return undefined;
  }
}

/** One report's identity, the same for the report and its ack. */
export const ackKey = (a: Ack) => `${a.of}:${a.id}:${a.first ?? ""}`;

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
