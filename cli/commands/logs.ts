import { setTimeout as sleep } from "node:timers/promises";
import { ok, type ApiClient } from "../api-client.js";
import type { Command, Context } from "../command.js";
import { CliError } from "../errors.js";
import { droppedNote, eventData, streamEvents } from "../log-stream.js";
import { droppedEvent, logEndEvent, tailLineEvent, tailTaskEvent } from "../../shared/schemas/live-logs.js";
import type { SseEvent } from "../../shared/sse-reader.js";
import { resolveFunctionRef } from "../project.js";

export const logs: Command = {
  name: "logs",
  summary: "print a task's log (the function's stdout and stderr)",
  usage: "logs <task-id> [--follow]",
  help: ["--follow, -f   stream the lines as the task prints them, until it finishes"],
  examples: ["gcfaas logs 01jc9x5v3e", "gcfaas logs 01jc9x5v3e --follow"],
  options: { follow: { type: "boolean", short: "f" } },
  args: [1, 1],
  async run(ctx, a) {
    const taskId = a.pos(0, "<task-id>");
    const api = await ctx.api();
    if (a.flag("follow")) {
      const { status, lines } = await followTaskLog(ctx, api, taskId);
      // With --json the lines come as the log route gives them, once the task finished.
      if (ctx.out.json) ctx.out.printJson({ id: taskId, finished: true, status, log: lines });
      else ctx.out.note(`(task ${taskId} finished with status ${status})`);
      return 0;
    }
    const log = await ok(api.GET("/v1/task/{id}/log", { params: { path: { id: taskId } } }));
    ctx.out.result(log, () => {
      for (const line of log.log) ctx.out.line(line);
      if (!log.finished) ctx.out.note(`(task ${taskId} has not finished; more lines may come: gcfaas logs ${taskId} --follow)`);
      else if (log.log.length === 0) ctx.out.note("(no log lines)");
    });
    return 0;
  },
};

/** A stream that ends without the task's end (the service restarted) is opened again, this often at most. */
const MAX_REOPENS = 5;

/**
 * Prints a task's lines as they come (collects them with --json) until its end. A stream opened
 * again starts from the task's first line: the lines already printed are skipped.
 */
async function followTaskLog(ctx: Context, api: ApiClient, taskId: string): Promise<{ status: number; lines: string[] }> {
  const lines: string[] = [];
  let status: number | undefined;
  for (let reopened = 0; status === undefined; reopened++) {
    if (reopened > MAX_REOPENS) throw new CliError("stream_ended", `the log stream of task ${taskId} kept ending before the task did`, [], 1, `read what it printed with: gcfaas logs ${taskId}`);
    if (reopened) {
      ctx.out.note("(the log stream ended early; following again)");
      await sleep(1000);
    }
    let seen = 0;
    await streamEvents(api, (api, o) => api.GET("/v1/task/{id}/log", { ...o, params: { path: { id: taskId }, query: { follow: "1" } } }), (e) => {
      if (e.event === "line" && ++seen > lines.length) {
        lines.push(e.data);
        if (!ctx.out.json) ctx.out.line(e.data);
      } else if (e.event === "dropped") ctx.out.note(droppedNote(e));
      else if (e.event === "end") status = eventData(logEndEvent, e).status;
    });
  }
  return { status, lines };
}

export const tail: Command = {
  name: "tail",
  summary: "stream the log of every task of a function as it runs, until Ctrl-C",
  usage: "tail <function-id|name|dir>",
  help: ["Each line is prefixed with its task's id; a task's start and end are noted on stderr.", "With --json: one JSON object a line, {event, ...data}."],
  examples: ["gcfaas tail hello", "gcfaas tail ./hello --json"],
  args: [1, 1],
  async run(ctx, a) {
    const ref = a.pos(0, "<function-id|name|dir>");
    const { id } = await resolveFunctionRef(ctx, ref, "tail");
    const api = await ctx.api();
    const json = (e: SseEvent, data: object) => ctx.out.stdout.write(`${JSON.stringify({ event: e.event, ...data })}\n`);
    const show = (e: SseEvent) => {
      if (e.event === "line") {
        const d = eventData(tailLineEvent, e);
        if (ctx.out.json) json(e, d);
        else ctx.out.line(`[${d.taskId}] ${d.line}`);
      } else if (e.event === "task") {
        const d = eventData(tailTaskEvent, e);
        if (ctx.out.json) json(e, d);
        else ctx.out.note(`── task ${d.taskId} ${d.state}${d.status === undefined ? "" : ` (status ${d.status})`}`);
      } else if (e.event === "dropped") {
        if (ctx.out.json) json(e, eventData(droppedEvent, e));
        else ctx.out.note(droppedNote(e));
      }
    };
    // A tail runs until Ctrl-C: a stream the service ended (a restart) is opened again, unless it
    // keeps ending without bringing anything.
    for (let idle = 0, opened = false; idle <= MAX_REOPENS; ) {
      if (opened) {
        ctx.out.note("(the log stream ended; tailing again)");
        await sleep(1000);
      }
      let got = false;
      const onEvent = (e: SseEvent) => {
        got = true;
        show(e);
      };
      const onOpen = () => {
        if (!opened) ctx.out.note(`tailing function ${ref}; Ctrl-C to stop`, true);
      };
      await streamEvents(api, (api, o) => api.GET("/v1/function/{id}/logs", { ...o, params: { path: { id }, query: { follow: "1" } } }), onEvent, onOpen);
      opened = true;
      idle = got ? 0 : idle + 1;
    }
    throw new CliError("stream_ended", `the tail of function ${ref} kept ending`, [], 1, `tail it again with: gcfaas tail ${ref}`);
  },
};
