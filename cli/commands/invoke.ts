import { apiErrorOf, exchange, ok, type ApiClient } from "../api-client.js";
import type { Answer } from "../../client/index.js";
import { cmd } from "../cli-name.js";
import type { Command } from "../command.js";
import { ApiError, CliError, UsageError } from "../errors.js";
import { fmtTaskStatus } from "../output.js";
import { idempotencyKey } from "../../shared/schemas/idempotency.js";
import { resolveFunctionRef } from "../project.js";
import { parseHeaders, parseQuery, taskBody } from "../task-input.js";
import { decodeBody, headerList, printResult, readResult, waitResult, withFunctionHeaders, type TaskResult } from "../task-result.js";

/** The 201 answer of POST /v1/task/{id}, read as text by `exchange`. */
type Created = Answer<"/v1/task/{id}", "post">;

/**
 * A paused function holds its tasks until it is resumed: waiting for one would only run out the
 * clock, so invoke says so at once (with --no-wait the task is queued and the note says it is held).
 */
async function pausedState(api: ApiClient, id: string): Promise<{ name: string; paused: boolean }> {
  return ok(api.GET("/v1/function/{id}", { params: { path: { id } } }));
}

/**
 * No successful build: name the function the user gave, so the hint's command can be pasted, and
 * tell a build still under way (invoked right after `deploy --no-wait`) from one that failed.
 */
async function withHint(api: ApiClient, err: ApiError, ref: string, functionId: string): Promise<ApiError> {
  if (err.code !== "no_successful_build") return err;
  const latest = await ok(api.GET("/v1/build/list", { params: { query: { functionId, limit: 1 } } }))
    .then((p) => p.results[0])
    .catch(() => undefined);
  const running = latest && (latest.status === "PENDING" || latest.status === "BUILDING");
  const hint = running
    ? `its build ${latest.id} is ${latest.status}; wait for it with \`${cmd(`build ${latest.id} --follow`)}\`, then invoke again`
    : `deploy it with \`${cmd("deploy <folder>")}\`; see why its last build failed with \`${cmd(`builds --function ${ref}`)}\``;
  return new ApiError(err.status, err.code, `function ${ref} has no successful build yet`, err.details, hint);
}

export const invoke: Command = {
  name: "invoke",
  summary: "run a function once: create a task, wait for it, print its result",
  usage: "invoke <function-id|name|dir> [--data JSON|@file|-] [--data-binary TEXT|@file|- [--content-type TYPE]] [--query k=v ...] [--header 'K: V' ...] [--idempotency-key KEY] [-i] [--no-wait] [--max-wait SECONDS]",
  help: [
    "--data, -d JSON           the task's JSON body; @file reads a file, - reads stdin",
    "--data-binary TEXT        any body, byte for byte; @file reads a file, - reads stdin",
    "--content-type TYPE       the body's Content-Type (default application/octet-stream with --data-binary)",
    "--query, -q k=v           a query parameter handed to the function (repeatable)",
    "--header, -H 'K: V'       a header handed to the function (repeatable)",
    "--idempotency-key KEY     run at most once per KEY: the same call again within 24 hours answers with the",
    "                          first call's task and result (another body or query under KEY is refused)",
    "--include, -i             print the status and the headers the function answered with before its body",
    "--no-wait                 print the task id and return",
    "--max-wait SECONDS        give up waiting after this long in all (default 300)",
    "",
    "Prints the function's response body (JSON pretty-printed); the status goes to stderr.",
    "Exits 1 at once when the function is paused, has no successful build, or no node can run it,",
    "and when the function answered 4xx or 5xx (500 crashed, 504 timed out, 410 cancelled).",
  ],
  examples: [
    "gcfaas invoke hello --query name=Ada",
    `gcfaas invoke 01jc9x2k7m --data '{"n": 7}'`,
    "echo '[1,2]' | gcfaas invoke . --data -",
    "gcfaas invoke resize --data-binary @photo.png --content-type image/png -i",
  ],
  options: {
    data: { type: "string", short: "d" },
    "data-binary": { type: "string" },
    "content-type": { type: "string" },
    query: { type: "string", short: "q", multiple: true },
    header: { type: "string", short: "H", multiple: true },
    include: { type: "boolean", short: "i" },
    "no-wait": { type: "boolean" },
    "max-wait": { type: "string" },
    "idempotency-key": { type: "string" },
  },
  args: [1, 1],
  async run(ctx, a) {
    const refArg = a.pos(0, "<function-id|name|dir>");
    // The command line is checked before any request: a usage error needs no service.
    const body = await taskBody(ctx, a);
    const query = parseQuery(a);
    const headers = parseHeaders(a);
    const maxWait = a.int("max-wait") ?? 300;
    const key = a.str("idempotency-key");
    if (key !== undefined && !idempotencyKey.safeParse(key).success) throw new UsageError("--idempotency-key must be 1 to 255 printable ASCII characters", "invoke");
    if (maxWait < 1) throw new UsageError("--max-wait must be at least 1 second", "invoke");
    const deadline = Date.now() + maxWait * 1000;
    const ref = await resolveFunctionRef(ctx, refArg, "invoke");
    const api = await ctx.api();
    const fn = await pausedState(api, ref.id);
    if (fn.paused && !a.flag("no-wait"))
      throw new CliError("function_paused", `function ${fn.name} (${ref.id}) is paused: its tasks wait until it is resumed`, [], 1, `resume it with \`${cmd(`resume ${refArg}`)}\`, or queue the task anyway with --no-wait`);
    const create = async (waitSeconds?: number) => {
      const { response: res, text } = await exchange((raw) =>
        api.POST("/v1/task/{id}", {
          params: { path: { id: ref.id }, header: { ...(waitSeconds ? { Prefer: `wait=${waitSeconds}` } : {}), ...(key !== undefined ? { "Idempotency-Key": key } : {}) } },
          // The function's own query string, bytes and headers: free-form, handed on as they are.
          querySerializer: () => query.toString(),
          ...(body ? { body: body.bytes, bodySerializer: (b: unknown) => b, headers: { ...headers, "content-type": body.contentType } } : { headers }),
          ...raw,
        }),
      );
      if (res.headers.get("idempotent-replayed") === "true") ctx.out.note(`key ${key} was used before: this is that call's task, not a new one`);
      return { res, text };
    };
    if (a.flag("no-wait")) {
      const { res, text } = await create();
      if (!res.ok) throw await withHint(api, apiErrorOf(res, text), refArg, ref.id);
      const { id } = JSON.parse(text) as Created;
      if (fn.paused) ctx.out.note(`function ${fn.name} is paused: task ${id} waits until \`${cmd(`resume ${refArg}`)}\``);
      ctx.out.result({ id }, () => ctx.out.line(id));
      return 0;
    }
    const show = async (r: TaskResult) => (a.flag("include") ? printResult(ctx, await withFunctionHeaders(api, r), true) : printResult(ctx, r));
    // One round trip when the function answers within the synchronous wait (RFC 7240 Prefer).
    const { res, text } = await create(Math.min(30, maxWait));
    const contentType = res.headers.get("content-type");
    if (res.headers.get("preference-applied") === "wait") {
      const id = res.headers.get("x-task-id") ?? "";
      return show({ id, status: res.status, progress: 100, contentType, body: decodeBody(text, contentType), headers: headerList(res.headers) });
    }
    if (!res.ok) throw await withHint(api, apiErrorOf(res, text), refArg, ref.id);
    const { id } = JSON.parse(text) as Created;
    ctx.out.note(`task ${id} created; waiting for its result`);
    return show(await waitResult(api, id, deadline, maxWait));
  },
};

export const result: Command = {
  name: "result",
  summary: "print a task's result (or its progress while it runs)",
  usage: "result <task-id> [--wait SECONDS]",
  help: ["--wait SECONDS   hold up to this long (at most 30) for the task to finish"],
  examples: ["gcfaas result 01jc9x5v3e --wait 10"],
  options: { wait: { type: "string", short: "w" } },
  args: [1, 1],
  async run(ctx, a) {
    const taskId = a.pos(0, "<task-id>");
    const wait = a.int("wait") ?? 0;
    if (wait < 0 || wait > 30) throw new UsageError("--wait must be from 0 to 30 seconds", "result");
    const api = await ctx.api();
    await ok(api.GET("/v1/task/{id}", { params: { path: { id: taskId } } })); // unknown ids answer the API's own 404, not a function's
    const r = await readResult(api, taskId, wait);
    if (r.status === 0) {
      ctx.out.result({ id: taskId, status: 0, progress: r.progress }, () => ctx.out.line(`task ${taskId} is ${fmtTaskStatus(0, r.progress)}; no result yet`));
      return 0;
    }
    return printResult(ctx, r);
  },
};
