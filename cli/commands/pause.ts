import { ok } from "../api-client.js";
import type { Command, Context } from "../command.js";
import { cmd } from "../cli-name.js";
import { resolveFunctionRef } from "../project.js";

/**
 * The API only toggles, so pausing twice would resume: read the state first and toggle only when
 * it differs from the one asked for. A second `pause` (or `resume`) changes nothing and says so.
 */
async function setPaused(ctx: Context, ref: string, want: boolean, command: string): Promise<void> {
  const { id } = await resolveFunctionRef(ctx, ref, command);
  const api = await ctx.api();
  const before = await ok(api.GET("/v1/function/{id}", { params: { path: { id } } }));
  if (before.paused !== want) await ok(api.POST("/v1/function/{id}/togglePause", { params: { path: { id } } }));
  const fn = await ok(api.GET("/v1/function/{id}", { params: { path: { id } } }));
  const changed = before.paused !== fn.paused;
  ctx.out.result({ id: fn.id, paused: fn.paused, changed }, () => {
    const who = `function ${fn.name} (${fn.id})`;
    if (fn.paused) ctx.out.line(changed ? `${who} is now paused; resume it with \`${cmd(`resume ${ref}`)}\`` : `${who} was already paused; nothing changed`);
    else ctx.out.line(changed ? `${who} is running again` : `${who} was already running; nothing changed`);
  });
}

export const pause: Command = {
  name: "pause",
  summary: "pause a function (no change when it is paused already)",
  usage: "pause <function-id|name|dir>",
  help: [
    "While paused, new tasks are accepted and held until the function is resumed; its public",
    "endpoints answer 503, and `gcfaas invoke` says so instead of waiting. Resume with `gcfaas resume`.",
  ],
  examples: ["gcfaas pause hello", "gcfaas pause 01jc9x2k7m"],
  args: [1, 1],
  run: (ctx, a) => setPaused(ctx, a.pos(0, "<function-id|name|dir>"), true, "pause"),
};

export const resume: Command = {
  name: "resume",
  summary: "resume a paused function (no change when it is running)",
  usage: "resume <function-id|name|dir>",
  help: ["Tasks held while the function was paused run now."],
  examples: ["gcfaas resume hello"],
  args: [1, 1],
  run: (ctx, a) => setPaused(ctx, a.pos(0, "<function-id|name|dir>"), false, "resume"),
};
