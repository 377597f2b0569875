import type { NewWork } from "./queue.js";
import type { TaskRow } from "../db/rows.js";
import type { BuildRow } from "../db/rows.js";

/** Control-plane paths an agent fetches with its agent token. */
export const agentPaths = {
  source: (buildId: string) => `/v1/agent/builds/${buildId}/source`,
  artifact: (buildId: string) => `/v1/agent/builds/${buildId}/artifact`,
  buildLog: (buildId: string) => `/v1/agent/builds/${buildId}/log`,
  input: (taskId: string) => `/v1/agent/tasks/${taskId}/input`,
  result: (taskId: string) => `/v1/agent/tasks/${taskId}/result`,
  log: (taskId: string) => `/v1/agent/tasks/${taskId}/log`,
  /** Where task `taskId` PUTs the storage it sets, and where a later task GETs a value task `setBy` set. */
  storage: (taskId: string, setBy = taskId) => `/v1/agent/tasks/${taskId}/storage/${setBy}`,
};

/** Builds run with generous fixed limits; the builder caps CPU, memory and time itself. */
const BUILD_TIMEOUT_S = 600;

export function taskWork(t: TaskRow): NewWork {
  const lang = t.lang;
  return {
    id: t.id,
    kind: "task",
    accountId: t.accountId,
    functionId: t.functionId,
    lang,
    privileged: t.privileged,
    egress: t.egress === "internet",
    cpu: t.cpuCount,
    mem: t.memSize,
    timeoutS: t.timeout,
    payload: {
      type: "task.assign",
      taskId: t.id,
      functionId: t.functionId,
      buildId: t.buildId,
      lang,
      capabilities: { timeout: t.timeout, cpuCount: t.cpuCount, memSize: t.memSize, privileged: t.privileged, egress: t.egress === "internet" },
      artifactPath: agentPaths.artifact(t.buildId!),
      input: t.input ? JSON.parse(t.input) : null,
      inputPath: agentPaths.input(t.id),
      resultPath: agentPaths.result(t.id),
      logPath: agentPaths.log(t.id),
      storagePath: agentPaths.storage(t.id),
    },
  };
}

export function buildWork(b: BuildRow): NewWork {
  return {
    id: b.id,
    kind: "build",
    accountId: b.accountId,
    functionId: b.functionId,
    lang: b.lang,
    privileged: false,
    cpu: 0,
    mem: 0,
    timeoutS: BUILD_TIMEOUT_S,
    payload: {
      type: "build.assign",
      buildId: b.id,
      functionId: b.functionId,
      lang: b.lang,
      sourcePath: agentPaths.source(b.id),
      artifactPath: agentPaths.artifact(b.id),
      logPath: agentPaths.buildLog(b.id),
    },
  };
}
