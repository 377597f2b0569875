import type { AgentMessage, DispatcherMessage } from "../../shared/protocol/messages.js";
import { taskInput } from "../../shared/protocol/messages.js";
import type { WorkContext } from "./work-context.js";
import type { Runner } from "../runner/index.js";
import type { LiveOutput } from "../runner/types.js";
import { log } from "../log.js";
import { fitTaskDone } from "../control/frame-budget.js";
import { INLINE_STORAGE_CHARS, STORAGE_HEADER, type StorageChange } from "../../shared/schemas/storage.js";
import { takeStorage } from "./storage-header.js";
import { maskSecrets } from "./mask-secrets.js";

type TaskAssign = Extract<DispatcherMessage, { type: "task.assign" }>;

export async function runTask(agent: WorkContext, runner: Runner, msg: TaskAssign, report: (m: AgentMessage) => void, signal?: AbortSignal, live?: LiveOutput): Promise<void> {
  const artifact = await agent.artifacts.acquire(msg.buildId, msg.artifactPath);
  let result: Awaited<ReturnType<Runner["invoke"]>>;
  try {
    const input = msg.input ?? taskInput.parse(await agent.control.getJson<unknown>(msg.inputPath));
    // The function's storage reaches it in the request's GC-Storage header, and only from here:
    // a caller's own header of that name never does.
    const headers = Object.fromEntries(Object.entries(input.headers).filter(([k]) => k.toLowerCase() !== STORAGE_HEADER));
    const stored = await storageValue(agent, msg);
    if (stored !== undefined) headers[STORAGE_HEADER] = stored;
    result = await runner.invoke({
      functionId: msg.functionId,
      buildId: msg.buildId,
      lang: msg.lang,
      artifactPath: artifact.file,
      capabilities: msg.capabilities,
      request: { method: input.method, query: input.query, headers, body: input.bodyEncoding === "base64" ? Buffer.from(input.body ?? "", "base64") : (input.body ?? "") },
      // Held in memory for this call only: never the container's environment, never the disk.
      ...(msg.config ? { env: { ...msg.config.env, ...msg.config.secrets } } : {}),
      signal,
      live,
    });
  } finally {
    await artifact.release();
  }
  // A function that prints a secret does not publish it in its task log.
  if (msg.config) result.log = maskSecrets(result.log, Object.values(msg.config.secrets));
  const status = result.status >= 100 && result.status <= 599 ? result.status : 502;
  const storage = await storageReport(agent, msg, result.headers, result.log);
  const { logPath } = msg;
  // Whatever would not fit in one frame is PUT first (see frame-budget.ts).
  const frame = await fitTaskDone(
    { taskId: msg.taskId, status, headers: result.headers, body: result.body, log: result.log, logCut: result.logCut, durationMs: result.durationMs },
    {
      body: (bytes) => agent.control.put(msg.resultPath, bytes),
      ...(logPath ? { log: (json: Buffer) => agent.control.put(logPath, json, "application/json") } : {}),
    },
  );
  report({ ...frame, runtime: result.runtime, ...(storage ? { storage } : {}) });
  log("debug", "task finished", { taskId: msg.taskId, status, ms: result.durationMs, container: result.container });
}

/** The storage value handed with the assignment: inline, or fetched (large values come through R2). */
async function storageValue(agent: WorkContext, msg: TaskAssign): Promise<string | undefined> {
  const given = msg.storage;
  if (!given) return undefined;
  if ("value" in given) return given.value;
  try {
    return (await agent.control.getBytes(given.path)).toString("base64");
  } catch (e) {
    // The value was replaced (or cleared) meanwhile: the task runs without it rather than not at all.
    log("warn", "function storage could not be fetched", { taskId: msg.taskId, error: String(e) });
    return undefined;
  }
}

/** The response's GC-Storage change, its bytes PUT first when too large for the report frame. */
async function storageReport(agent: WorkContext, msg: TaskAssign, headers: Record<string, string>, lines: string[]): Promise<StorageChange | undefined> {
  const taken = takeStorage(headers, lines);
  if (!taken || taken.change.op === "clear" || (taken.change.value ?? "").length <= INLINE_STORAGE_CHARS) return taken?.change;
  if (!msg.storagePath) {
    lines.push("[runtime] GC-Storage not stored: the value is too large for this dispatcher's protocol");
    return undefined;
  }
  await agent.control.put(msg.storagePath, taken.bytes!);
  return { op: "set", size: taken.change.size };
}
