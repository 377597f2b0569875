export { Runner } from "./runner.js";
export type { Capabilities, ContainerInfo, FunctionRequest, InvokeRequest, InvokeResult, RunnerOptions } from "./types.js";
