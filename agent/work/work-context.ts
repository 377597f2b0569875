import type { SandboxRuntime } from "../docker/sandbox-runtime.js";
import type { AgentConfig } from "../config.js";
import type { ControlPlane } from "../control/control-plane.js";
import type { ArtifactStore } from "./artifact-store.js";
import type { BuildSlots } from "./build-slots.js";

/** What a build or a task run needs of its agent (agent.ts implements it), so runs need not know the agent. */
export interface WorkContext {
  readonly config: AgentConfig;
  readonly control: ControlPlane;
  readonly artifacts: ArtifactStore;
  readonly buildSlots: BuildSlots;
  readonly sandbox: SandboxRuntime;
  /** A per-build scratch folder under the state dir, removed after use. */
  scratch(name: string): Promise<string>;
}
