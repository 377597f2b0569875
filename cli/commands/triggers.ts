import { ok } from "../api-client.js";
import { defined, deleteCommand, type Command } from "../command.js";
import { UsageError } from "../errors.js";
import { fmtAge, fmtTags, fmtTime, yesNo } from "../output.js";
import { resolveFunctionRef } from "../project.js";
import { pagedListCommand } from "../paged-list.js";

const listTriggers = pagedListCommand({
  name: "list",
  usageName: "triggers list",
  summary: "list triggers, newest first",
  what: "triggers",
  list: (api, query) => ok(api.GET("/v1/trigger/list", { params: { query } })),
  functionHelp: "only triggers that fire after this function",
  limitHelp: "per page, 3 to 20 (default 20)",
  example: "gcfaas triggers list --function 01jc9x2k7m",
  functionColumns: { FUNCTION: (t) => t.functionId, NEXT: (t) => t.nextId },
  columns: [
        { title: "ID", value: (t) => t.id },
        { title: "FUNCTION", value: (t) => t.functionId },
        { title: "ON STATUS", value: (t) => String(t.status) },
        { title: "NEXT", value: (t) => t.nextId },
        { title: "RESULT", value: (t) => (t.includeResult ? "passed" : "-") },
        { title: "TAGS", value: (t) => fmtTags(t.tags) },
        { title: "AGE", value: (t) => fmtAge(t.createdAt) },
      ],
});

const createTrigger: Command = {
  name: "create",
  summary: "run a function automatically after another one finishes",
  usage: "triggers create --function ID|NAME|DIR --next ID|NAME|DIR [--status CODE] [--include-result] [--description TEXT] [--tag TAG-ID ...]",
  help: [
    "--function ID|NAME|DIR   the function after whose tasks the trigger fires",
    "--next ID|NAME|DIR       the function that runs next",
    "--status CODE       fire when the first task finished with this HTTP status (default 200)",
    "--include-result    pass the first task's response body as the next task's body",
  ],
  examples: ["gcfaas triggers create --function 01jc9x2k7m --next 01jc9x4n2p --include-result"],
  options: {
    function: { type: "string", short: "f" },
    next: { type: "string" },
    status: { type: "string" },
    "include-result": { type: "boolean" },
    description: { type: "string" },
    tag: { type: "string", multiple: true },
  },
  args: [0, 0],
  async run(ctx, a) {
    const first = a.str("function");
    const next = a.str("next");
    if (!first) throw new UsageError("missing --function", "triggers create");
    if (!next) throw new UsageError("missing --next", "triggers create");
    const status = a.int("status");
    const body = defined({
      functionId: (await resolveFunctionRef(ctx, first, "triggers create")).id,
      nextId: (await resolveFunctionRef(ctx, next, "triggers create")).id,
      status,
      includeResult: a.flag("include-result"),
      description: a.str("description"),
      tag: a.has("tag") ? a.list("tag") : undefined,
    });
    const res = await ok((await ctx.api()).POST("/v1/trigger", { body }));
    ctx.out.result(res, () => ctx.out.line(`created trigger ${res.id}: ${body.functionId} → ${body.nextId} on status ${body.status ?? 200}`));
  },
};

const getTrigger: Command = {
  name: "get",
  summary: "show a trigger",
  usage: "triggers get <trigger-id>",
  examples: ["gcfaas triggers get 01jc9x6h1r"],
  args: [1, 1],
  async run(ctx, a) {
    const id = a.pos(0, "<trigger-id>");
    const t = await ok((await ctx.api()).GET("/v1/trigger/{id}", { params: { path: { id } } }));
    ctx.out.result(t, () =>
      ctx.out.fields([
        ["id", t.id ?? id],
        ["function", t.functionId],
        ["next", t.nextId],
        ["on status", String(t.status)],
        ["include result", yesNo(t.includeResult)],
        ["description", t.description || "-"],
        ["tags", fmtTags(t.tags)],
        ["created", fmtTime(t.createdAt)],
      ]),
    );
  },
};

const editTrigger: Command = {
  name: "edit",
  summary: "change a trigger's status, result passing, description or tags",
  usage: "triggers edit <trigger-id> [--status CODE] [--include-result|--no-include-result] [--description TEXT] [--tag TAG-ID ... | --no-tags]",
  examples: ["gcfaas triggers edit 01jc9x6h1r --status 500 --no-include-result"],
  options: {
    status: { type: "string" },
    "include-result": { type: "boolean" },
    "no-include-result": { type: "boolean" },
    description: { type: "string" },
    tag: { type: "string", multiple: true },
    "no-tags": { type: "boolean" },
  },
  args: [1, 1],
  async run(ctx, a) {
    const id = a.pos(0, "<trigger-id>");
    if (a.flag("include-result") && a.flag("no-include-result")) throw new UsageError("give --include-result or --no-include-result, not both", "triggers edit");
    const body = defined({
      status: a.int("status"),
      includeResult: a.flag("include-result") ? true : a.flag("no-include-result") ? false : undefined,
      description: a.str("description"),
      tag: a.flag("no-tags") ? [] : a.has("tag") ? a.list("tag") : undefined,
    });
    if (Object.keys(body).length === 0) throw new UsageError("nothing to change", "triggers edit");
    const api = await ctx.api();
    await ok(api.PATCH("/v1/trigger/{id}", { params: { path: { id } }, body }));
    const t = await ok(api.GET("/v1/trigger/{id}", { params: { path: { id } } }));
    ctx.out.result(t, () => ctx.out.line(`updated trigger ${id}`));
  },
};

const deleteTrigger = deleteCommand({ group: "triggers", resource: "trigger", summary: "delete a trigger", example: "01jc9x6h1r", remove: (api, id) => ok(api.DELETE("/v1/trigger/{id}", { params: { path: { id } } })) });

export const triggers: Command = {
  name: "triggers",
  summary: "manage triggers (function chains): list, create, get, edit, delete",
  usage: "triggers list|create|get|edit|delete ...",
  subcommands: [listTriggers, createTrigger, getTrigger, editTrigger, deleteTrigger],
};
