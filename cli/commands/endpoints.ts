import { ok } from "../api-client.js";
import { defined, deleteCommand, type Args, type Command } from "../command.js";
import { UsageError } from "../errors.js";
import { fmtAge, fmtTags, fmtTime } from "../output.js";
import { resolveFunctionRef } from "../project.js";
import { pagedListCommand } from "../paged-list.js";

interface TimeLimit {
  from: string;
  to: string;
  timezone: string;
}

const FIELD_OPTIONS = {
  description: { type: "string" },
  "daily-limit": { type: "string" },
  origin: { type: "string", multiple: true },
  ip: { type: "string", multiple: true },
  from: { type: "string" },
  to: { type: "string" },
  timezone: { type: "string" },
  tag: { type: "string", multiple: true },
} as const;

const FIELD_HELP = [
  "--description TEXT   printable ASCII, at most 256 characters",
  "--daily-limit N      accepted calls per day; -1 = unlimited (default), 0 = none",
  "--origin URL         allowed browser origin, https://host[:port] (repeatable; none = any)",
  "--ip IPV4            allowed caller address (repeatable; none = any)",
  "--from HH:MM --to HH:MM [--timezone TZ]",
  "                     accept calls only in this daily window (timezone default UTC)",
  "--tag TAG-ID         tags (repeatable)",
];

/** The request body from the field options; `edit` adds the --no-* switches that clear a field. */
function endpointBody(a: Args, editing: boolean) {
  const from = a.str("from");
  const to = a.str("to");
  const tz = a.str("timezone");
  let timeLimit: TimeLimit | null | undefined;
  if (from !== undefined || to !== undefined || tz !== undefined) {
    if (from === undefined || to === undefined) throw new UsageError("a time window needs both --from and --to (HH:MM)", a.command);
    timeLimit = { from, to, timezone: tz ?? "UTC" };
  }
  if (editing && a.flag("no-time-limit")) {
    if (timeLimit) throw new UsageError("give a time window or --no-time-limit, not both", a.command);
    timeLimit = null;
  }
  return defined({
    description: a.str("description"),
    dailyLimit: a.int("daily-limit"),
    origin: editing && a.flag("no-origin") ? [] : a.has("origin") ? a.list("origin") : undefined,
    ip: editing && a.flag("no-ip") ? [] : a.has("ip") ? a.list("ip") : undefined,
    timeLimit,
    tag: editing && a.flag("no-tags") ? [] : a.has("tag") ? a.list("tag") : undefined,
  });
}

function fmtWindow(t: TimeLimit | null): string {
  return t ? `${t.from}–${t.to} ${t.timezone}` : "any time";
}

const listEndpoints = pagedListCommand({
  name: "list",
  usageName: "endpoints list",
  summary: "list public endpoints, newest first",
  what: "public endpoints",
  list: (api, query) => ok(api.GET("/v1/endpoint/list", { params: { query } })),
  functionHelp: "only endpoints of this function",
  limitHelp: "per page, 3 to 999 (default 20)",
  example: "gcfaas endpoints list",
  functionColumns: { FUNCTION: (e) => e.functionId },
  columns: [
        { title: "ID", value: (e) => e.id },
        { title: "FUNCTION", value: (e) => e.functionId ?? "-" },
        { title: "TAGS", value: (e) => fmtTags(e.tags) },
        { title: "AGE", value: (e) => fmtAge(e.createdAt) },
        { title: "DESCRIPTION", value: (e) => e.description || "" },
      ],
});

const createEndpoint: Command = {
  name: "create",
  summary: "expose a function at a public address (/gc/<endpoint-id>)",
  usage: "endpoints create <function-id|name|dir> [--description TEXT] [--daily-limit N] [--origin URL ...] [--ip IPV4 ...] [--from HH:MM --to HH:MM [--timezone TZ]] [--tag TAG-ID ...]",
  help: FIELD_HELP,
  examples: ["gcfaas endpoints create ./hello --daily-limit 1000 --origin https://example.com", "gcfaas endpoints create 01jc9x2k7m --from 09:00 --to 17:00 --timezone Europe/Paris"],
  options: FIELD_OPTIONS,
  args: [1, 1],
  async run(ctx, a) {
    const body = endpointBody(a, false);
    const ref = await resolveFunctionRef(ctx, a.pos(0, "<function-id|name|dir>"), "endpoints create");
    const api = await ctx.api();
    const res = await ok(api.POST("/v1/endpoint/{id}", { params: { path: { id: ref.id } }, body }));
    ctx.out.result(res, () => {
      ctx.out.line(`created endpoint ${res.id} for function ${ref.id}`);
      // With origins set the service refuses a call without an allowed Origin header, so the curl carries one.
      const origins = a.list("origin");
      ctx.out.line(`call it: curl -X POST${origins.length ? ` -H 'Origin: ${origins[0]}'` : ""} ${api.baseUrl}/gc/${res.id}`);
      // Every other address is refused with ip_not_allowed: say so before the user tries.
      const ips = a.list("ip");
      if (ips.length) ctx.out.line(`note: this endpoint answers only callers from ${ips.join(", ")}; the curl above works only from there`);
    });
  },
};

const getEndpoint: Command = {
  name: "get",
  summary: "show a public endpoint and its address",
  usage: "endpoints get <endpoint-id>",
  examples: ["gcfaas endpoints get 01jc9x7k2s"],
  args: [1, 1],
  async run(ctx, a) {
    const id = a.pos(0, "<endpoint-id>");
    const api = await ctx.api();
    const e = await ok(api.GET("/v1/endpoint/{id}", { params: { path: { id } } }));
    ctx.out.result(e, () =>
      ctx.out.fields([
        ["id", e.id ?? id],
        ["address", `${api.baseUrl}/gc/${e.id ?? id}`],
        ["function", e.functionId],
        ["description", e.description || "-"],
        ["daily limit", e.dailyLimit === -1 ? "unlimited" : String(e.dailyLimit)],
        ["origins", e.origin.length ? e.origin.join(", ") : "any"],
        ["ips", e.ip.length ? e.ip.join(", ") : "any"],
        ["time window", fmtWindow(e.timeLimit)],
        ["tags", fmtTags(e.tags)],
        ["created", fmtTime(e.createdAt)],
      ]),
    );
  },
};

const editEndpoint: Command = {
  name: "edit",
  summary: "change a public endpoint's restrictions, description or tags",
  usage: "endpoints edit <endpoint-id> [create's options] [--no-origin] [--no-ip] [--no-time-limit] [--no-tags]",
  help: [...FIELD_HELP, "--no-origin, --no-ip, --no-time-limit, --no-tags   clear that field"],
  examples: ["gcfaas endpoints edit 01jc9x7k2s --daily-limit -1 --no-time-limit"],
  options: { ...FIELD_OPTIONS, "no-origin": { type: "boolean" }, "no-ip": { type: "boolean" }, "no-time-limit": { type: "boolean" }, "no-tags": { type: "boolean" } },
  args: [1, 1],
  async run(ctx, a) {
    const id = a.pos(0, "<endpoint-id>");
    const body = endpointBody(a, true);
    if (Object.keys(body).length === 0) throw new UsageError("nothing to change", "endpoints edit");
    const api = await ctx.api();
    await ok(api.PATCH("/v1/endpoint/{id}", { params: { path: { id } }, body }));
    const e = await ok(api.GET("/v1/endpoint/{id}", { params: { path: { id } } }));
    ctx.out.result(e, () => ctx.out.line(`updated endpoint ${id}`));
  },
};

const deleteEndpoint = deleteCommand({ group: "endpoints", resource: "endpoint", summary: "delete a public endpoint", example: "01jc9x7k2s", remove: (api, id) => ok(api.DELETE("/v1/endpoint/{id}", { params: { path: { id } } })) });

const endpointMetrics: Command = {
  name: "metrics",
  summary: "tasks issued through a public endpoint: today, last 7 days, pending",
  usage: "endpoints metrics <endpoint-id>",
  examples: ["gcfaas endpoints metrics 01jc9x7k2s"],
  args: [1, 1],
  async run(ctx, a) {
    const id = a.pos(0, "<endpoint-id>");
    const m = await ok((await ctx.api()).GET("/v1/endpoint/{id}/metrics", { params: { path: { id } } }));
    ctx.out.result(m, () =>
      ctx.out.fields([
        ["today", String(m.todayTasks)],
        ["last 7 days", String(m.weekTasks)],
        ["pending", String(m.pendingTasks)],
      ]),
    );
  },
};

export const endpoints: Command = {
  name: "endpoints",
  summary: "manage public endpoints: list, create, get, edit, delete, metrics",
  usage: "endpoints list|create|get|edit|delete|metrics ...",
  subcommands: [listEndpoints, createEndpoint, getEndpoint, editEndpoint, deleteEndpoint, endpointMetrics],
};
