import type { AgentMessage, DispatcherMessage } from "../../shared/protocol/messages.js";
import { taskInput } from "../../shared/protocol/messages.js";
import type { Agent } from "../agent.js";
import type { Runner } from "../runner/index.js";
import { log } from "../log.js";
import { fitTaskDone } from "../control/frame-budget.js";

type TaskAssign = Extract<DispatcherMessage, { type: "task.assign" }>;

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
  const status = result.status >= 100 && result.status <= 599 ? result.status : 502;
  const { logPath } = msg;
  // Whatever would not fit in one frame is PUT first (see frame-budget.ts).
  const frame = await fitTaskDone(
    { taskId: msg.taskId, status, headers: result.headers, body: result.body, log: result.log, durationMs: result.durationMs },
    {
      body: (bytes) => agent.control.put(msg.resultPath, bytes),
      ...(logPath ? { log: (json: Buffer) => agent.control.put(logPath, json, "application/json") } : {}),
    },
  );
  report(frame);
  log("debug", "task finished", { taskId: msg.taskId, status, ms: result.durationMs, container: result.container });
}
