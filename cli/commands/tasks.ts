import { ok } from "../api-client.js";
import type { Command } from "../command.js";
import { fmtAge, fmtTaskStatus, fmtTime } from "../output.js";
import { resolveFunctionRef } from "../project.js";

export const tasks: Command = {
  name: "tasks",
  summary: "list tasks, newest first",
  usage: "tasks [--function ID|NAME|DIR] [--limit N] [--before TASK-ID]",
  help: ["--function ID|NAME|DIR   only tasks of this function", "--limit N           at most N tasks (1 to 1000, default 20)", "--before TASK-ID    tasks older than this one (next page)"],
  examples: ["gcfaas tasks", "gcfaas tasks --function ./hello --limit 5"],
  options: { function: { type: "string", short: "f" }, limit: { type: "string", short: "n" }, before: { type: "string" } },
  args: [0, 0],
  async run(ctx, a) {
    const fn = a.str("function");
    const functionId = fn === undefined ? undefined : (await resolveFunctionRef(ctx, fn, "tasks")).id;
    const limit = a.int("limit") ?? 20;
    const rows = await ok((await ctx.api()).GET("/v1/task/list", { params: { query: { functionId, limit, before: a.str("before") } } }));
    ctx.out.result(rows, () => {
      ctx.out.table(
        rows,
        [
          { title: "ID", value: (t) => t.id },
          { title: "STATUS", value: (t) => fmtTaskStatus(t.status, t.progress) },
          { title: "AGE", value: (t) => fmtAge(t.issued) },
        ],
        "(no tasks)",
      );
      if (rows.length === limit) ctx.out.note(`more may follow: gcfaas tasks${fn ? ` --function ${fn}` : ""} --before ${rows[rows.length - 1]!.id}`);
    });
  },
};

export const task: Command = {
  name: "task",
  summary: "show one task: status, times, node, capabilities",
  usage: "task <task-id>",
  examples: ["gcfaas task 01jc9x5v3e"],
  args: [1, 1],
  async run(ctx, a) {
    const id = a.pos(0, "<task-id>");
    const t = await ok((await ctx.api()).GET("/v1/task/{id}", { params: { path: { id } } }));
    ctx.out.result(t, () =>
      ctx.out.fields([
        ["id", t.id ?? id],
        ["function", t.functionId],
        ["status", fmtTaskStatus(t.status, t.progress)],
        ["progress", `${t.progress}%`],
        ["attempts", String(t.attempts ?? "-")],
        ["issued", fmtTime(t.issued)],
        ["assigned", fmtTime(t.assigned)],
        ["finished", fmtTime(t.finished)],
        ["node", t.node ?? "-"],
        ["timeout", `${t.timeout}s`],
        ["cpuCount", String(t.capabilities?.cpuCount ?? "-")],
        ["memSize", t.capabilities ? `${t.capabilities.memSize} MiB` : "-"],
        ["networkLatency", t.capabilities ? `${t.capabilities.networkLatency} ms` : "-"],
        ["privileged", t.capabilities?.privileged ? "yes" : "no"],
      ]),
    );
  },
};
