import { followBuild, FINAL_BUILD_STATUSES } from "../build-follow.js";
import type { Command, Context } from "../command.js";
import { ok, type ApiClient } from "../api-client.js";
import { UsageError } from "../errors.js";
import { fmtAge, fmtTime } from "../output.js";
import { pagedListCommand } from "../paged-list.js";
import { topLevelHint } from "../deploy-target.js";

export const builds = pagedListCommand({
  name: "builds",
  usageName: "builds",
  summary: "list builds, newest first",
  what: "builds",
  list: (api, query) => ok(api.GET("/v1/build/list", { params: { query } })),
  functionHelp: "only builds of this function",
  limitHelp: "builds per page (1 to 100, default 20)",
  example: "gcfaas builds --function ./hello",
  functionColumns: { FUNCTION: (b) => b.functionId },
  columns: [
    { title: "ID", value: (b) => b.id },
    { title: "FUNCTION", value: (b) => b.functionId },
    { title: "STATUS", value: (b) => b.status },
    { title: "AGE", value: (b) => fmtAge(b.createdAt) },
  ],
});

export const build: Command = {
  name: "build",
  summary: "show one build: status, timeline and log (its first and last 500 lines; --log for all of it)",
  usage: "build <build-id> [--follow | --log]",
  help: [
    "--follow, -f   follow the build until it ends (exits 1 when it FAILED)",
    "--log          print the build's whole log (kept up to 4 MiB) and nothing else",
  ],
  examples: ["gcfaas build 01jc9x3b8q", "gcfaas build 01jc9x3b8q --follow", "gcfaas build 01jc9x3b8q --log > build.log"],
  options: { follow: { type: "boolean", short: "f" }, log: { type: "boolean" } },
  args: [1, 1],
  async run(ctx, a) {
    const id = a.pos(0, "<build-id>");
    const api = await ctx.api();
    if (a.flag("log")) {
      if (a.flag("follow")) throw new UsageError("--log and --follow do not go together: follow the build, then print its log", "build");
      return printWholeLog(ctx, api, id);
    }
    let b = await ok(api.GET("/v1/build/{id}", { params: { path: { id } } }));
    if (a.flag("follow") && !FINAL_BUILD_STATUSES.has(b.status)) {
      b = await followBuild(ctx, api, id, { maxWaitSeconds: 900 });
      ctx.out.result(b, () => undefined);
    } else {
      ctx.out.result(b, () => {
        ctx.out.fields([
          ["id", b.id ?? id],
          ["function", b.functionId],
          ["status", b.status],
          ["arch", (b.arch ?? []).join(", ")],
          ["created", fmtTime(b.createdAt)],
        ]);
        ctx.out.line("timeline:");
        for (const t of b.timeline ?? []) ctx.out.line(`  ${fmtTime(t.time)}  ${t.status}`);
        ctx.out.line("log:");
        for (const line of b.log ?? []) ctx.out.line(`  ${line}`);
        if ((b.logLines ?? 0) > (b.log ?? []).length) ctx.out.note(`(the log's middle lines are cut here; all of it: gcfaas build ${id} --log)`);
      });
    }
    const hint = b.status === "FAILED" ? topLevelHint(b.log ?? []) : undefined;
    if (hint) ctx.out.note(`hint: ${hint}`);
    return a.flag("follow") && b.status === "FAILED" ? 1 : 0;
  },
};

/** GET /v1/build/<id>/log: the text as it is (with --json, `{id, log}`). */
async function printWholeLog(ctx: Context, api: ApiClient, id: string): Promise<number> {
  const text = await ok(api.GET("/v1/build/{id}/log", { params: { path: { id } }, parseAs: "text" }));
  ctx.out.result({ id, log: text }, () => ctx.out.stdout.write(text));
  return 0;
}
