import { ok } from "../api-client.js";
import type { Answer } from "../../client/index.js";
import { defined, deleteCommand, type Command } from "../command.js";
import { UsageError } from "../errors.js";
import { fmtTime, yesNo } from "../output.js";
import { resolveFunctionRef } from "../project.js";
import { pagedListCommand } from "../paged-list.js";
import { runnable } from "../cli-name.js";
import { parseQuery, readDataBytes } from "../task-input.js";
import { fmtLocal, upcoming } from "../../shared/time/schedule-runs.js";

export { upcoming };

/** A schedule as the list answers it (a get answers its payload too). */
type Schedule = Answer<"/v1/scheduled/list", "get">["results"][number];

/** "in 45s", "in 12m", "in 3h", "in 2d": how soon, at a glance. */
export function fmtIn(at: number, now: number): string {
  const s = Math.max(0, Math.round((at - now) / 1000));
  if (s < 60) return `in ${s}s`;
  if (s < 3600) return `in ${Math.round(s / 60)}m`;
  if (s < 86400) return `in ${Math.round(s / 3600)}h`;
  return `in ${Math.round(s / 86400)}d`;
}

const nextRunsColumn = (s: Schedule) => {
  const now = Date.now();
  const runs = upcoming(s, 2, now);
  return runs.length ? runs.map((t) => `${fmtLocal(t, s.timezone)} (${fmtIn(t, now)})`).join(", ") : "-";
};

const listSchedules = pagedListCommand({
  name: "list",
  usageName: "schedules list",
  summary: "list schedules, newest first, with their next runs",
  what: "schedules",
  list: (api, query) => ok(api.GET("/v1/scheduled/list", { params: { query } })),
  functionHelp: "only schedules of this function",
  limitHelp: "per page, 3 to 999 (default 20)",
  example: "gcfaas schedules list --function 01jc9x2k7m",
  functionColumns: { FUNCTION: (s) => s.functionId },
  columns: [
    { title: "ID", value: (s) => s.id },
    { title: "FUNCTION", value: (s) => s.functionId },
    { title: "CRON", value: (s) => s.cron },
    { title: "ZONE", value: (s) => s.timezone },
    { title: "ACTIVE", value: (s) => yesNo(s.active) },
    { title: "NEXT RUNS", value: nextRunsColumn },
  ],
});

const timingHelp = [
  "--cron EXPR         five fields: minute hour day-of-month month day-of-week (*, lists, ranges, steps, names)",
  "--timezone ZONE     an IANA zone, e.g. Europe/London (default UTC)",
];

const createSchedule: Command = {
  name: "create",
  summary: "run a function on a cron schedule in a time zone",
  usage: "schedules create --function ID|NAME|DIR --cron EXPR [--timezone ZONE] [--description TEXT]",
  help: ["--function ID|NAME|DIR   the function to run", ...timingHelp],
  examples: ['gcfaas schedules create --function 01jc9x2k7m --cron "0 9 * * mon-fri" --timezone Europe/London'],
  options: { function: { type: "string", short: "f" }, cron: { type: "string" }, timezone: { type: "string" }, description: { type: "string" } },
  args: [0, 0],
  async run(ctx, a) {
    const fn = a.str("function");
    const cron = a.str("cron");
    if (!fn) throw new UsageError("missing --function", "schedules create");
    if (!cron) throw new UsageError("missing --cron", "schedules create");
    const timezone = a.str("timezone") ?? "UTC";
    const functionId = (await resolveFunctionRef(ctx, fn, "schedules create")).id;
    const body = defined({ functionId, cron, timezone, description: a.str("description") });
    const res = await ok((await ctx.api()).POST("/v1/scheduled", { body }));
    const next = upcoming({ active: true, cron, timezone }, 1)[0];
    ctx.out.result(res, () => ctx.out.line(`created schedule ${res.id}: ${functionId} at "${cron}" ${timezone}${next ? `; next run ${fmtLocal(next, timezone)} (${fmtIn(next, Date.now())})` : ""}`));
  },
};

const getSchedule: Command = {
  name: "get",
  summary: "show a schedule, its payload and its next five runs",
  usage: "schedules get <schedule-id>",
  examples: ["gcfaas schedules get 01jc9x6h1r"],
  args: [1, 1],
  async run(ctx, a) {
    const id = a.pos(0, "<schedule-id>");
    const s = await ok((await ctx.api()).GET("/v1/scheduled/{id}", { params: { path: { id } } }));
    const now = Date.now();
    const p = s.inlinePayload;
    ctx.out.result(s, () =>
      ctx.out.fields([
        ["id", s.id],
        ["function", s.functionId],
        ["cron", s.cron],
        ["time zone", s.timezone],
        ["active", yesNo(s.active)],
        ["description", s.description || "-"],
        ["payload", p ? `${Buffer.from(p.body, "base64").length} bytes${p.contentType ? ` of ${p.contentType}` : ""}${p.query ? `, query ${p.query}` : ""}` : "-"],
        ["created", fmtTime(s.createdAt)],
        ["next runs", upcoming(s, 5, now).map((t) => `${fmtLocal(t, s.timezone)} = ${fmtTime(new Date(t).toISOString())} (${fmtIn(t, now)})`).join("; ") || "-"],
      ]),
    );
  },
};

const editSchedule: Command = {
  name: "edit",
  summary: "change a schedule's expression, zone, description, or pause and resume it",
  usage: "schedules edit <schedule-id> [--cron EXPR] [--timezone ZONE] [--active|--inactive] [--description TEXT]",
  help: [...timingHelp.map((h) => h.replace(" (default UTC)", "")), "--active/--inactive resume or pause the schedule", "Fields not given keep their values."],
  examples: ["gcfaas schedules edit 01jc9x6h1r --inactive", 'gcfaas schedules edit 01jc9x6h1r --cron "*/15 * * * *"'],
  options: { cron: { type: "string" }, timezone: { type: "string" }, active: { type: "boolean" }, inactive: { type: "boolean" }, description: { type: "string" } },
  args: [1, 1],
  async run(ctx, a) {
    const id = a.pos(0, "<schedule-id>");
    if (a.flag("active") && a.flag("inactive")) throw new UsageError("give --active or --inactive, not both", "schedules edit");
    const change = defined({
      cron: a.str("cron"),
      timezone: a.str("timezone"),
      active: a.flag("active") ? true : a.flag("inactive") ? false : undefined,
      description: a.str("description"),
    });
    if (Object.keys(change).length === 0) throw new UsageError("nothing to change", "schedules edit");
    const api = await ctx.api();
    // The API takes the whole schedule (active, cron and timezone are required): fill in the rest.
    const s = await ok(api.GET("/v1/scheduled/{id}", { params: { path: { id } } }));
    await ok(api.PATCH("/v1/scheduled/{id}", { params: { path: { id } }, body: { active: s.active, cron: s.cron, timezone: s.timezone, ...change } }));
    const after = await ok(api.GET("/v1/scheduled/{id}", { params: { path: { id } } }));
    ctx.out.result(after, () => ctx.out.line(`updated schedule ${id}`));
  },
};

const setPayload: Command = {
  name: "payload",
  summary: "set what each run receives: a body of any type, its Content-Type and a query string",
  usage: "schedules payload <schedule-id> [--data TEXT|@file|-] [--content-type TYPE] [--query k=v ...]",
  help: [
    "--data, -d TEXT      the body, byte for byte; @file reads a file, - reads stdin; none for an empty body",
    "--content-type TYPE  the body's Content-Type (default application/octet-stream with --data)",
    "--query, -q k=v      a query parameter handed to each run (repeatable)",
  ],
  examples: ['gcfaas schedules payload 01jc9x6h1r --data \'{"report": "daily"}\' --content-type application/json --query lang=en'],
  options: { data: { type: "string", short: "d" }, "content-type": { type: "string" }, query: { type: "string", short: "q", multiple: true } },
  args: [1, 1],
  async run(ctx, a) {
    const id = a.pos(0, "<schedule-id>");
    const body = await readDataBytes(ctx, a);
    const contentType = a.str("content-type") ?? (body ? "application/octet-stream" : undefined);
    const query = parseQuery(a);
    await ok(
      (await ctx.api()).PUT("/v1/scheduled/{id}/payload", {
        params: { path: { id } },
        // The payload is free-form: any query string, any bytes with their Content-Type, kept as given.
        querySerializer: () => query.toString(),
        ...(body ? { body, bodySerializer: (b: unknown) => b } : {}),
        headers: contentType ? { "content-type": contentType } : {},
      }),
    );
    ctx.out.result({ id, payload: true }, () => ctx.out.line(`set the payload of schedule ${id} (${body?.length ?? 0} bytes)`));
  },
};

const trySchedule: Command = {
  name: "try",
  summary: "run the schedule's function with its payload now",
  usage: "schedules try <schedule-id>",
  examples: ["gcfaas schedules try 01jc9x6h1r"],
  args: [1, 1],
  async run(ctx, a) {
    const id = a.pos(0, "<schedule-id>");
    const res = await ok((await ctx.api()).POST("/v1/scheduled/{id}/try", { params: { path: { id } } }));
    ctx.out.result(res, () => ctx.out.line(runnable(`started task ${res.id}; see its result with \`gcfaas result ${res.id}\``)));
  },
};

const deleteSchedule = deleteCommand({ group: "schedules", resource: "scheduled", summary: "delete a schedule", example: "01jc9x6h1r", remove: (api, id) => ok(api.DELETE("/v1/scheduled/{id}", { params: { path: { id } } })) });

export const schedules: Command = {
  name: "schedules",
  summary: "manage scheduled runs (cron in a time zone): list, get, create, edit, delete, payload, try",
  usage: "schedules list|get|create|edit|delete|payload|try ...",
  subcommands: [listSchedules, getSchedule, createSchedule, editSchedule, deleteSchedule, setPayload, trySchedule],
};
