import { ok } from "../api-client.js";
import type { Answer } from "../../client/index.js";
import type { Command, Context } from "../command.js";
import { UsageError } from "../errors.js";
import { resolveFunctionRef } from "../project.js";

type RetryPolicy = Answer<"/v1/function/{id}/retry", "get">;

function showRetry(ctx: Context, functionId: string, p: RetryPolicy, note?: string) {
  ctx.out.result(p, () => {
    if (note) ctx.out.note(note);
    ctx.out.fields([
      ["function", functionId],
      ["attempts", p.maxAttempts === 1 ? "1 (no retry)" : String(p.maxAttempts)],
      ["backoff", `${p.backoffSeconds}s, doubling each retry (±20 %, at most 1h)`],
      ["dead letter", p.deadLetterFunctionId ?? "-"],
    ]);
  });
}

export const retry: Command = {
  name: "retry",
  summary: "retry a function's failed asynchronous tasks, and name a dead-letter function",
  usage: "retry <function-id|name|dir> [--attempts <1-5>] [--backoff <seconds>] [--dead-letter <function>|--no-dead-letter]",
  help: [
    "--attempts <n>            attempts in all (1 to 5; 1: no retry)",
    "--backoff <seconds>       wait before the first retry (1 to 3600), doubling for each next one",
    "--dead-letter <function>  the function that gets one task when attempts run out",
    "--no-dead-letter          no dead-letter function",
    "",
    "Asynchronous tasks (not `Prefer: wait` calls) that answer a 5xx or time out are retried.",
    "Options not given keep their value. Without options, shows the current policy.",
  ],
  examples: ["gcfaas retry ./hello", "gcfaas retry ./hello --attempts 3 --backoff 10 --dead-letter failures", "gcfaas retry ./hello --attempts 1 --no-dead-letter"],
  options: { attempts: { type: "string" }, backoff: { type: "string" }, "dead-letter": { type: "string" }, "no-dead-letter": { type: "boolean" } },
  args: [1, 1],
  async run(ctx, a) {
    const attempts = a.int("attempts");
    const backoff = a.int("backoff");
    const deadLetterRef = a.str("dead-letter");
    const noDeadLetter = a.flag("no-dead-letter");
    if (deadLetterRef && noDeadLetter) throw new UsageError("give --dead-letter or --no-dead-letter, not both", "retry");
    const ref = await resolveFunctionRef(ctx, a.pos(0, "<function-id|name|dir>"), "retry");
    const api = await ctx.api();
    const path = { params: { path: { id: ref.id } } };
    const changing = attempts !== undefined || backoff !== undefined || deadLetterRef !== undefined || noDeadLetter;
    if (changing) {
      const now = await ok(api.GET("/v1/function/{id}/retry", path));
      const deadLetter = deadLetterRef ? (await resolveFunctionRef(ctx, deadLetterRef, "retry")).id : noDeadLetter ? null : now.deadLetterFunctionId;
      await ok(api.PUT("/v1/function/{id}/retry", { ...path, body: { maxAttempts: attempts ?? now.maxAttempts, backoffSeconds: backoff ?? now.backoffSeconds, deadLetterFunctionId: deadLetter } }));
    }
    showRetry(ctx, ref.id, await ok(api.GET("/v1/function/{id}/retry", path)), changing ? `retry policy of ${ref.id} updated` : undefined);
  },
};

export const concurrency: Command = {
  name: "concurrency",
  summary: "cap how many of a function's tasks run at once, across the fleet",
  usage: "concurrency <function-id|name|dir> [<max>|--none]",
  help: [
    "<max>    at most this many tasks run at once (1 to 1000); the rest wait pending, in order",
    "--none   no cap beyond the account's",
    "",
    "Without <max> or --none, shows the current cap.",
  ],
  examples: ["gcfaas concurrency ./hello", "gcfaas concurrency ./hello 3", "gcfaas concurrency ./hello --none"],
  options: { none: { type: "boolean" } },
  args: [1, 2],
  async run(ctx, a) {
    const maxArg = a.positionals[1];
    const none = a.flag("none");
    if (maxArg !== undefined && none) throw new UsageError("give <max> or --none, not both", "concurrency");
    if (maxArg !== undefined && !/^\d+$/.test(maxArg)) throw new UsageError(`<max> must be an integer from 1 to 1000, got "${maxArg}"`, "concurrency");
    const ref = await resolveFunctionRef(ctx, a.pos(0, "<function-id|name|dir>"), "concurrency");
    const api = await ctx.api();
    const path = { params: { path: { id: ref.id } } };
    const changing = maxArg !== undefined || none;
    if (changing) await ok(api.PUT("/v1/function/{id}/concurrency", { ...path, body: { max: none ? null : Number(maxArg) } }));
    const cap = await ok(api.GET("/v1/function/{id}/concurrency", path));
    ctx.out.result(cap, () => {
      if (changing) ctx.out.note(`concurrency of ${ref.id} updated`);
      ctx.out.fields([
        ["function", ref.id],
        ["max", cap.max === null ? "no cap (the account's limits only)" : `${cap.max} at once`],
      ]);
    });
  },
};
