import { ok } from "../api-client.js";
import type { Answer } from "../../client/index.js";
import type { Command, Context } from "../command.js";
import { UsageError } from "../errors.js";
import { resolveFunctionRef } from "../project.js";

type Release = Answer<"/v1/function/{id}/release", "get">;

/** `<build>=<weight>`: the weight's range (1 to 99) is the service's to check. */
function parseCanary(v: string): { buildId: string; weight: number } {
  const m = /^([^=\s]+)=(\d+)$/.exec(v);
  if (!m) throw new UsageError(`--canary takes <build-id>=<weight>, e.g. 01jc9x3b8q=10, not "${v}"`, "release");
  return { buildId: m[1]!, weight: Number(m[2]) };
}

function showRelease(ctx: Context, functionId: string, r: Release, note?: string) {
  ctx.out.result(r, () => {
    if (note) ctx.out.note(note);
    ctx.out.fields([
      ["function", functionId],
      ["build", r.buildId ?? "(none yet: no successful build)"],
      ["mode", r.pinned ? "pinned" : "follows the newest successful build"],
      ["canary", r.canary ? `${r.canary.buildId} (${r.canary.weight}% of new tasks)` : "-"],
    ]);
  });
}

export const release: Command = {
  name: "release",
  summary: "choose which build a function runs: pin one, follow the newest, add a canary",
  usage: "release <function-id|name|dir> [<build-id>|--latest] [--canary <build-id>=<weight>]",
  help: [
    "<build-id>                    pin this successful build: new tasks run it, whatever is built later",
    "--latest                      follow the newest successful build again (the default)",
    "--canary <build-id>=<weight>  send weight % (1 to 99) of new tasks to a second build",
    "",
    "Each call sets the whole release: without --canary, any canary is removed.",
    "Without a build or --latest, shows the current release. Tasks already issued keep their build.",
  ],
  examples: [
    "gcfaas release ./hello",
    "gcfaas release ./hello 01jc9x3b8q",
    "gcfaas release ./hello 01jc9x3b8q --canary 01jc9y7d2f=10",
    "gcfaas release ./hello --latest",
  ],
  options: { latest: { type: "boolean" }, canary: { type: "string" } },
  args: [1, 2],
  async run(ctx, a) {
    const build = a.positionals[1];
    const latest = a.flag("latest");
    if (build && latest) throw new UsageError("give a build id or --latest, not both", "release");
    const canary = a.str("canary");
    if (!build && !latest && canary) throw new UsageError("--canary goes with a build id to pin, or --latest", "release");
    const parsedCanary = canary ? parseCanary(canary) : undefined;
    const ref = await resolveFunctionRef(ctx, a.pos(0, "<function-id|name|dir>"), "release");
    const api = await ctx.api();
    const path = { params: { path: { id: ref.id } } };
    if (build || latest) await ok(api.PUT("/v1/function/{id}/release", { ...path, body: { buildId: build ?? null, ...(parsedCanary ? { canary: parsedCanary } : {}) } }));
    const r = await ok(api.GET("/v1/function/{id}/release", path));
    showRelease(ctx, ref.id, r, build || latest ? `release of ${ref.id} updated` : undefined);
  },
};

export const rollback: Command = {
  name: "rollback",
  summary: "pin the successful build before the one a function runs now",
  usage: "rollback <function-id|name|dir>",
  help: ["Drops any canary. Fails (409) when no successful build precedes the one that runs."],
  examples: ["gcfaas rollback ./hello"],
  args: [1, 1],
  async run(ctx, a) {
    const ref = await resolveFunctionRef(ctx, a.pos(0, "<function-id|name|dir>"), "rollback");
    const r = await ok((await ctx.api()).POST("/v1/function/{id}/rollback", { params: { path: { id: ref.id } } }));
    showRelease(ctx, ref.id, r, `rolled ${ref.id} back to build ${r.buildId}`);
  },
};
