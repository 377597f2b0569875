import Docker from "dockerode";

/** One Docker client per process; DOCKER_HOST is honoured by docker-modem. */
let shared: Docker | null = null;

export function dockerClient(): Docker {
  shared ??= new Docker();
  return shared;
}

/** Labels on every container the agent makes, so a restarted agent can find and remove leftovers. */
export const LABEL_MANAGED = "dev.gcfaas.managed";
export const LABEL_ROLE = "dev.gcfaas.role";
export const LABEL_AGENT = "dev.gcfaas.agent";
export const LABEL_FUNCTION = "dev.gcfaas.function";
export const LABEL_BUILD = "dev.gcfaas.build";

export type ContainerRole = "run" | "build";

/** Removes containers left by an earlier agent process with the same `agentId` (all roles). */
export async function removeLeftoverContainers(docker: Docker, agentId: string): Promise<number> {
  const list = await docker.listContainers({
    all: true,
    filters: { label: [`${LABEL_MANAGED}=true`, `${LABEL_AGENT}=${agentId}`] },
  });
  await Promise.all(list.map((c) => forceRemove(docker, c.Id)));
  return list.length;
}

/** Kill and remove in one call; a container already gone is not an error. */
export async function forceRemove(docker: Docker, id: string): Promise<void> {
  try {
    await docker.getContainer(id).remove({ force: true, v: true });
  } catch (err) {
    const status = (err as { statusCode?: number }).statusCode;
    if (status !== 404 && status !== 409) throw err;
  }
}
