import { ok } from "../api-client.js";
import type { Answer } from "../../client/index.js";
import fs from "node:fs/promises";
import path from "node:path";
import { defined, type Command } from "../command.js";
import { runnable } from "../cli-name.js";
import { confirm } from "../confirm.js";
import { UsageError } from "../errors.js";
import { fmtAge, fmtTags, fmtTime, yesNo } from "../output.js";
import { PROJECT_FILE, readProject, resolveFunctionRef, writeProject } from "../project.js";

type Capabilities = Answer<"/v1/function/{id}/capabilities", "get">;

export function capabilityFields(c: Capabilities): [string, string][] {
  return [
    ["timeout", `${c.timeout}s`],
    ["cpuCount", c.cpuCount === 0 ? "0 (node default)" : String(c.cpuCount)],
    ["memSize", c.memSize === 0 ? "0 (node default)" : `${c.memSize} MiB`],
    ["networkLatency", `${c.networkLatency} ms`],
    ["privileged", yesNo(c.privileged)],
  ];
}

export const list: Command = {
  name: "list",
  summary: "list your functions",
  usage: "list [--tag TAG-ID]",
  help: ["--tag TAG-ID   only functions carrying this tag"],
  examples: ["gcfaas list", "gcfaas list --tag 01jc9w0q4t --json"],
  options: { tag: { type: "string" } },
  args: [0, 0],
  async run(ctx, a) {
    const api = await ctx.api();
    const fns = await ok(api.GET("/v1/function/list", { params: { query: { tag: a.str("tag") } } }));
    ctx.out.result(fns, () =>
      ctx.out.table(
        fns,
        [
          { title: "ID", value: (f) => f.id },
          { title: "NAME", value: (f) => f.name },
          { title: "LANG", value: (f) => f.lang },
          { title: "TAGS", value: (f) => fmtTags(f.tags) },
          { title: "AGE", value: (f) => fmtAge(f.createdAt) },
          { title: "DESCRIPTION", value: (f) => f.description || "" },
        ],
        runnable("(no functions; create one with: gcfaas init hello --lang py && gcfaas deploy hello)"),
      ),
    );
  },
};

export const get: Command = {
  name: "get",
  summary: "show a function: details, capabilities, metrics",
  usage: "get <function-id|name|dir>",
  examples: ["gcfaas get 01jc9x2k7m", "gcfaas get ./hello --json"],
  args: [1, 1],
  async run(ctx, a) {
    const ref = await resolveFunctionRef(ctx, a.pos(0, "<function-id|name|dir>"), "get");
    const fn = await ok((await ctx.api()).GET("/v1/function/{id}", { params: { path: { id: ref.id } } }));
    ctx.out.result(fn, () => {
      ctx.out.fields([
        ["id", fn.id],
        ["name", fn.name],
        ["description", fn.description || "-"],
        ["lang", fn.lang],
        ["type", fn.type],
        ["state", fn.paused ? "paused" : "running"],
        ["tags", fmtTags(fn.tags)],
        ["created", fmtTime(fn.createdAt)],
      ]);
      ctx.out.line("capabilities:");
      ctx.out.fields(capabilityFields(fn.capabilities).map(([k, v]) => [`  ${k}`, v] as const));
      ctx.out.line("metrics:");
      const m = fn.metrics;
      ctx.out.fields([
        ["  today", String(m.todaysTasks)],
        ["  last 7 days", String(m.weekTasks)],
        ["  pending", String(m.pendingTasks)],
        ["  completed", String(m.completedTasks)],
      ]);
    });
  },
};

export const edit: Command = {
  name: "edit",
  summary: "rename a function, change its description or tags",
  usage: "edit <function-id|name|dir> [--name NAME] [--description TEXT] [--tag TAG-ID ...] [--no-tags]",
  help: ["--tag TAG-ID   replaces the function's tags (repeatable)", "--no-tags      removes every tag"],
  examples: ["gcfaas edit 01jc9x2k7m --name greeter --tag 01jc9w0q4t"],
  options: { name: { type: "string", short: "n" }, description: { type: "string" }, tag: { type: "string", multiple: true }, "no-tags": { type: "boolean" } },
  args: [1, 1],
  async run(ctx, a) {
    const body = defined({
      name: a.str("name"),
      description: a.str("description"),
      tag: a.flag("no-tags") ? [] : a.has("tag") ? a.list("tag") : undefined,
    });
    if (Object.keys(body).length === 0) throw new UsageError("nothing to change: give --name, --description, --tag or --no-tags", "edit");
    const ref = await resolveFunctionRef(ctx, a.pos(0, "<function-id|name|dir>"), "edit");
    const api = await ctx.api();
    await ok(api.PATCH("/v1/function/{id}", { params: { path: { id: ref.id } }, body }));
    const fn = await ok(api.GET("/v1/function/{id}", { params: { path: { id: ref.id } } }));
    if (ref.dir && body.name) {
      const project = await readProject(ref.dir);
      if (project) await writeProject(ref.dir, { ...project, name: fn.name });
    }
    ctx.out.result(fn, () => ctx.out.line(`updated function ${fn.name} (${fn.id})`));
  },
};

export const capabilities: Command = {
  name: "capabilities",
  summary: "show a function's capabilities, or set some and show the result",
  usage: "capabilities <function-id|name|dir> [--timeout SECONDS] [--cpu N] [--memory MIB] [--privileged true|false]",
  help: [
    "--timeout SECONDS       10 to 120",
    "--cpu N                 0 to 4, fractions allowed; 0 = the node's default",
    "--memory MIB            0 to 2048; 0 = the node's default",
    "--privileged true|false run only on nodes that allow privileged work (true needs the operator's grant)",
  ],
  examples: ["gcfaas capabilities 01jc9x2k7m", "gcfaas capabilities ./hello --timeout 60 --memory 512"],
  options: { timeout: { type: "string" }, cpu: { type: "string" }, memory: { type: "string" }, privileged: { type: "string" } },
  args: [1, 1],
  async run(ctx, a) {
    const body = defined({ timeout: a.num("timeout"), cpuCount: a.num("cpu"), memSize: a.num("memory"), privileged: a.bool("privileged") });
    const ref = await resolveFunctionRef(ctx, a.pos(0, "<function-id|name|dir>"), "capabilities");
    const api = await ctx.api();
    if (Object.keys(body).length > 0) await ok(api.POST("/v1/function/{id}/capabilities", { params: { path: { id: ref.id } }, body }));
    const caps = await ok(api.GET("/v1/function/{id}/capabilities", { params: { path: { id: ref.id } } }));
    ctx.out.result(caps, () => {
      if (Object.keys(body).length > 0) ctx.out.note(`updated capabilities of ${ref.id}`);
      ctx.out.fields(capabilityFields(caps));
    });
  },
};

export const del: Command = {
  name: "delete",
  summary: "delete a function with its builds, triggers and endpoints",
  usage: "delete <function-id|name|dir> [--yes]",
  help: [
    "--yes, -y   do not ask (needed when stdin is not a terminal, e.g. in scripts)",
    "",
    "Asks before deleting. Pending tasks are cancelled; finished tasks stay readable.",
    `Given a folder, also forgets the function id in its ${PROJECT_FILE}.`,
  ],
  examples: ["gcfaas delete hello", "gcfaas delete 01jc9x2k7m --yes"],
  options: { yes: { type: "boolean", short: "y" } },
  args: [1, 1],
  async run(ctx, a) {
    const ref = await resolveFunctionRef(ctx, a.pos(0, "<function-id|name|dir>"), "delete");
    const api = await ctx.api();
    if (!a.flag("yes")) {
      const fn = await ok(api.GET("/v1/function/{id}", { params: { path: { id: ref.id } } }));
      const sure = await confirm(ctx, `delete function ${fn.name} (${fn.id}, ${fn.lang}) with its builds, triggers and endpoints?`, "delete");
      if (!sure) {
        ctx.out.result({ id: ref.id, deleted: false }, () => ctx.out.line("nothing deleted"));
        return 1;
      }
    }
    await ok(api.DELETE("/v1/function/{id}", { params: { path: { id: ref.id } } }));
    if (ref.dir) {
      const project = await readProject(ref.dir);
      if (project) {
        const { functionId: _gone, ...rest } = project;
        if (Object.keys(rest).length) await writeProject(ref.dir, rest);
        else await fs.rm(path.join(ref.dir, PROJECT_FILE), { force: true });
      }
    }
    ctx.out.result({ id: ref.id, deleted: true }, () => ctx.out.line(`deleted function ${ref.id}`));
  },
};
