import type Docker from "dockerode";

/** The runtimes a node can run unprivileged functions and builds under. */
export type SandboxRuntime = "runsc" | "runc";

/**
 * Chooses the node's sandbox: gVisor's runsc when the operator asks for it or leaves it to "auto"
 * and Docker has it registered (`/etc/docker/daemon.json` runtimes); runc otherwise. Asking for
 * runsc on a node without it stops the agent at start, rather than running code less isolated
 * than the operator said.
 */
export async function resolveSandbox(docker: Docker, wanted: "auto" | SandboxRuntime): Promise<SandboxRuntime> {
  if (wanted === "runc") return "runc";
  const info = (await docker.info()) as { Runtimes?: Record<string, unknown> };
  const has = Object.keys(info.Runtimes ?? {}).includes("runsc");
  if (has) return "runsc";
  if (wanted === "runsc") throw new Error("--sandbox runsc: Docker has no runsc runtime (install gVisor's runsc and register it in /etc/docker/daemon.json; see docs/agents.md)");
  return "runc";
}
