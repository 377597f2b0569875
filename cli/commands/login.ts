import { apiClient, ok, type ApiClient } from "../api-client.js";
import type { Command } from "../command.js";
import { configPath, loadConfig, normalizeUrl, removeConfig, resolveConnection, saveConfig } from "../config-store.js";
import { cmd } from "../cli-name.js";
import { ApiError, UsageError } from "../errors.js";

/**
 * A token the service refuses is either wrong or the operator's admin token, which only opens the
 * operator's routes: tell the two apart, since "log in again" helps with neither.
 */
async function verifyToken(api: ApiClient): Promise<void> {
  try {
    await ok(api.GET("/v1/tag/list"));
  } catch (err) {
    if (!(err instanceof ApiError) || err.status !== 401) throw err;
    const isAdmin = await ok(api.GET("/v1/admin/nodes")).then(
      () => true,
      () => false,
    );
    if (isAdmin)
      throw new ApiError(401, "admin_token", "this is the operator's admin token: it is for operator commands only (nodes, accounts), not for functions", [], `log in with an account's access token; run operator commands with \`GCFAAS_TOKEN=<admin-token> ${cmd("nodes list")}\``);
    throw new ApiError(401, "unauthorized", `the service at ${api.baseUrl} does not know this token; nothing was stored`, [], "check the token: copy it again from where it was issued (the start command prints the first one), without spaces");
  }
}

export const login: Command = {
  name: "login",
  summary: "store the service URL and access token",
  usage: "login --url URL --token TOKEN [--skip-verify]",
  help: [
    "--url URL        base URL of the service, e.g. http://127.0.0.1:8787",
    "--token TOKEN    an access token of your account",
    "--skip-verify    store without checking the token against the service",
    "",
    "Stored in ~/.config/gcfaas/config.json (or the file named by $GCFAAS_CONFIG), readable by you only.",
    "GCFAAS_URL and GCFAAS_TOKEN, and --url/--token on any command, override what is stored.",
  ],
  examples: ["gcfaas login --url http://127.0.0.1:8787 --token gcf_123..."],
  options: { "skip-verify": { type: "boolean" } },
  args: [0, 0],
  async run(ctx, a) {
    const url = a.str("url");
    const token = a.str("token");
    if (!url) throw new UsageError("missing --url", "login");
    if (!token) throw new UsageError("missing --token", "login");
    const normalized = normalizeUrl(url);
    // One cheap authenticated call: a wrong URL or token fails here, not on the first real command.
    if (!a.flag("skip-verify")) await verifyToken(apiClient(normalized, token));
    const file = await saveConfig(ctx.env, { url: normalized, token });
    ctx.out.result({ url: normalized, configFile: file }, () => ctx.out.line(`logged in to ${normalized} (saved to ${file})`));
  },
};

export const logout: Command = {
  name: "logout",
  summary: "forget the stored URL and token",
  usage: "logout",
  args: [0, 0],
  async run(ctx) {
    const file = configPath(ctx.env);
    const removed = await removeConfig(ctx.env);
    ctx.out.result({ configFile: file, removed }, () => ctx.out.line(removed ? `removed ${file}` : `nothing stored (${file} does not exist)`));
  },
};

export const config: Command = {
  name: "config",
  summary: "show which URL and token the commands use, and where they come from",
  usage: "config",
  args: [0, 0],
  async run(ctx) {
    const stored = await loadConfig(ctx.env);
    const c = await resolveConnection(ctx.env, ctx.flags);
    const masked = c.token ? `${c.token.slice(0, 6)}…${c.token.slice(-4)}` : undefined;
    const data = {
      configFile: configPath(ctx.env),
      stored: { url: stored.url ?? null, token: stored.token ? true : false },
      url: c.url ?? null,
      urlSource: c.sources.url ?? null,
      token: masked ?? null,
      tokenSource: c.sources.token ?? null,
    };
    ctx.out.result(data, () =>
      ctx.out.fields([
        ["config file", data.configFile],
        ["url", c.url ? `${c.url} (from ${c.sources.url})` : "(not set)"],
        ["token", masked ? `${masked} (from ${c.sources.token})` : "(not set)"],
      ]),
    );
  },
};
