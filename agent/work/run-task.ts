import type { AgentMessage, DispatcherMessage } from "../../shared/protocol/messages.js";
import { taskInput } from "../../shared/protocol/messages.js";
import type { Agent } from "../agent.js";
import type { Runner } from "../runner/index.js";
import { log } from "../log.js";

type TaskAssign = Extract<DispatcherMessage, { type: "task.assign" }>;

/** Bodies up to this size travel in the `task.done` frame; larger ones are PUT first. */
const INLINE_BODY_BYTES = 512 * 1024;

export async function runTask(agent: Agent, runner: Runner, msg: TaskAssign, report: (m: AgentMessage) => void, signal?: AbortSignal): Promise<void> {
  const artifact = await agent.artifacts.acquire(msg.buildId, msg.artifactPath);
  let result: Awaited<ReturnType<Runner["invoke"]>>;
  try {
    const input = msg.input ?? taskInput.parse(await agent.control.getJson<unknown>(msg.inputPath));
    result = await runner.invoke({
      functionId: msg.functionId,
      buildId: msg.buildId,
      lang: msg.lang,
      artifactPath: artifact.file,
      capabilities: msg.capabilities,
      request: { method: input.method, query: input.query, headers: input.headers, body: input.bodyEncoding === "base64" ? Buffer.from(input.body ?? "", "base64") : (input.body ?? "") },
      signal,
    });
  } finally {
    await artifact.release();
  }
  let body: string | null = result.body.length ? result.body.toString("base64") : null;
  let bodyUploaded = false;
  if (result.body.length > INLINE_BODY_BYTES) {
    await agent.control.put(msg.resultPath, result.body);
    body = null;
    bodyUploaded = true;
  }
  const status = result.status >= 100 && result.status <= 599 ? result.status : 502;
  report({
    type: "task.done",
    taskId: msg.taskId,
    status,
    headers: result.headers,
    body,
    bodyUploaded,
    log: result.log.slice(0, 10_000).map((l) => l.slice(0, 8192)),
    durationMs: result.durationMs,
  });
  log("debug", "task finished", { taskId: msg.taskId, status, ms: result.durationMs, container: result.container });
}
