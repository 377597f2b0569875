import { readFileSync } from "node:fs";
import path from "node:path";
import type { Writable } from "node:stream";
import { apiClient, type ApiClient } from "./api-client.js";
import { cmd, detectCliName, runnable } from "./cli-name.js";
import { Args, type Command, type Context } from "./command.js";
import { requireConnection, type Env } from "./config-store.js";
import { CliError, UsageError } from "./errors.js";
import { Output } from "./output.js";
import { deploy } from "./commands/deploy.js";
import { endpoints } from "./commands/endpoints.js";
import { builds, build } from "./commands/builds.js";
import { capabilities, del, edit, get, list } from "./commands/functions.js";
import { pause, resume } from "./commands/pause.js";
import { init } from "./commands/init.js";
import { invoke, result } from "./commands/invoke.js";
import { logs, tail } from "./commands/logs.js";
import { config, login, logout } from "./commands/login.js";
import { tags } from "./commands/tags.js";
import { task, tasks } from "./commands/tasks.js";
import { triggers } from "./commands/triggers.js";
import { schedules } from "./commands/schedules.js";
import { nodes } from "./commands/nodes.js";
import { release, rollback } from "./commands/release.js";
import { concurrency, retry } from "./commands/retry.js";
import { accounts } from "./commands/accounts.js";
import { env } from "./commands/env.js";
import { secret } from "./commands/secret.js";
import { network } from "./commands/network.js";
import { up } from "./commands/up.js";
import { templates } from "./commands/templates.js";

/** Every command, in the order `gcfaas --help` shows them. */
export const COMMANDS: Command[] = [
  login,
  logout,
  config,
  init,
  templates,
  deploy,
  up,
  invoke,
  result,
  logs,
  tail,
  list,
  get,
  edit,
  capabilities,
  network,
  env,
  secret,
  pause,
  resume,
  del,
  tasks,
  task,
  builds,
  build,
  release,
  rollback,
  retry,
  concurrency,
  tags,
  triggers,
  schedules,
  nodes,
  accounts,
  endpoints,
];

export interface Io {
  stdout: Writable & { isTTY?: boolean };
  stderr: Writable & { isTTY?: boolean };
  stdin: NodeJS.ReadableStream;
  env: Env;
  cwd: string;
}

const VALUE_OPTIONS = new Set(["--url", "--token"]);

/** Index of the first word that is not an option (nor the value of a global option taking one). */
function firstWord(argv: string[]): number {
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    if (a === "--") return i + 1 < argv.length ? i + 1 : -1;
    if (VALUE_OPTIONS.has(a)) {
      i++;
      continue;
    }
    if (!a.startsWith("-") || a === "-") return i;
  }
  return -1;
}

function version(): string {
  try {
    const pkg = JSON.parse(readFileSync(path.join(import.meta.dirname, "..", "package.json"), "utf8")) as { version?: string };
    return pkg.version ?? "0.0.0";
  } catch {
    return "0.0.0";
  }
}

function mainHelp(): string {
  const width = Math.max(...COMMANDS.map((c) => c.name.length)) + 2;
  return [
    "gcfaas: command-line tool for the gc-faas function service",
    "",
    "Usage: gcfaas <command> [arguments] [options]",
    "",
    "Commands:",
    ...COMMANDS.map((c) => `  ${c.name.padEnd(width)}${c.summary}`),
    "",
    "Global options (every command):",
    "  --json          print the API's JSON on stdout, for scripts",
    "  --url URL       service URL (overrides $GCFAAS_URL and the stored login)",
    "  --token TOKEN   access token (overrides $GCFAAS_TOKEN and the stored login)",
    "  -h, --help      show help",
    "",
    runnable("Start with: gcfaas login --url URL --token TOKEN; gcfaas init hello --lang py; gcfaas deploy hello; gcfaas invoke hello"),
    ...(cmd("") === "gcfaas " ? [] : ["Not on your PATH? `npm install -g .` in the repository puts gcfaas there (see docs/cli.md)."]),
    runnable("Run `gcfaas <command> --help` for a command's options. Exit codes: 0 ok, 1 error, 2 usage error."),
  ].join("\n");
}

function commandHelp(cmd: Command, parent?: Command): string {
  const lines = [`gcfaas ${parent ? `${parent.name} ` : ""}${cmd.name}: ${cmd.summary}`, "", `Usage: gcfaas ${cmd.usage}`];
  if (cmd.subcommands) {
    const width = Math.max(...cmd.subcommands.map((s) => s.name.length)) + 2;
    lines.push("", "Subcommands:", ...cmd.subcommands.map((s) => `  ${s.name.padEnd(width)}${s.summary}`), "", `Run \`gcfaas ${cmd.name} <subcommand> --help\` for its options.`);
  }
  if (cmd.help?.length) lines.push("", ...cmd.help.map((h) => (h ? `  ${h}` : "")));
  if (cmd.examples?.length) lines.push("", "Examples:", ...cmd.examples.map((e) => `  ${e}`));
  if (!cmd.subcommands) lines.push("", "Also: --json, --url URL, --token TOKEN (see gcfaas --help).");
  return lines.join("\n");
}

function findCommand(list: Command[], name: string): Command | undefined {
  return list.find((c) => c.name === name);
}

/** Runs one command line; returns the exit code (0 ok, 1 error, 2 usage error). */
export async function main(argv: string[], io: Io = defaultIo()): Promise<number> {
  const wantsJson = argv.includes("--json");
  detectCliName(io.env);
  const write = (s: string) => io.stdout.write(`${s}\n`);
  let usageFor = "";
  try {
    let i = firstWord(argv);
    if (i < 0) {
      if (argv.includes("--version")) write(version());
      else {
        const asked = argv.length === 0 || argv.includes("--help") || argv.includes("-h");
        (asked ? io.stdout : io.stderr).write(`${mainHelp()}\n`);
        if (!asked) return 2;
      }
      return 0;
    }
    let name = argv[i]!;
    let rest = [...argv.slice(0, i), ...argv.slice(i + 1)];
    if (name === "help") {
      const j = firstWord(rest);
      if (j < 0) {
        write(mainHelp());
        return 0;
      }
      name = rest[j]!;
      rest = [...rest.slice(0, j), ...rest.slice(j + 1), "--help"];
    }
    let cmd = findCommand(COMMANDS, name);
    if (!cmd) throw new UsageError(`unknown command "${name}"; run \`gcfaas --help\` for the list`);
    let parent: Command | undefined;
    if (cmd.subcommands) {
      const j = firstWord(rest);
      if (j < 0) {
        const asked = rest.includes("--help") || rest.includes("-h");
        (asked ? io.stdout : io.stderr).write(`${commandHelp(cmd)}\n`);
        return asked ? 0 : 2;
      }
      const sub = findCommand(cmd.subcommands, rest[j]!);
      if (!sub) throw new UsageError(`unknown subcommand "${rest[j]}" of ${cmd.name}; use one of ${cmd.subcommands.map((s) => s.name).join(", ")}`, cmd.name);
      parent = cmd;
      cmd = sub;
      rest = [...rest.slice(0, j), ...rest.slice(j + 1)];
    }
    const fullName = parent ? `${parent.name} ${cmd.name}` : cmd.name;
    usageFor = cmd.usage;
    const args = Args.parse(fullName, rest, cmd.options ?? {});
    if (args.flag("help")) {
      write(commandHelp(cmd, parent));
      return 0;
    }
    const [min, max] = cmd.args ?? [0, Infinity];
    if (args.positionals.length < min) throw new UsageError(`missing argument; usage: gcfaas ${cmd.usage}`, fullName);
    if (args.positionals.length > max) throw new UsageError(unexpected(args.positionals[max]!, cmd.options ?? {}, args.flag("json")), fullName);
    const out = new Output(args.flag("json"), io.stdout, io.stderr);
    const flags = { url: args.str("url"), token: args.str("token") };
    let client: ApiClient | undefined;
    const ctx: Context = {
      out,
      env: io.env,
      cwd: io.cwd,
      stdin: io.stdin,
      flags,
      async api() {
        if (!client) {
          const c = await requireConnection(io.env, flags);
          client = apiClient(c.url, c.token);
        }
        return client;
      },
    };
    if (!cmd.run) throw new UsageError(`${fullName} needs a subcommand`, fullName);
    return (await cmd.run(ctx, args)) ?? 0;
  } catch (err) {
    return reportError(err, io, wantsJson, usageFor);
  }
}

/** `error: <code>: <message>`, one line per detail, and a hint; with --json the error body on stdout too. */
function reportError(err: unknown, io: Io, json: boolean, usage: string): number {
  const e =
    err instanceof CliError ? err : new CliError("internal", err instanceof Error ? err.message : String(err), [], 1);
  const lines = [`error: ${e.code}: ${runnable(e.message)}`];
  for (const d of e.details) lines.push(d.field ? `  - ${d.field}: ${d.message}` : `  - ${d.message}`);
  if (e instanceof UsageError) {
    if (usage && !e.message.includes("usage:")) lines.push(`usage: gcfaas ${usage}`);
    if (e.command) lines.push(`run \`${cmd(`${e.command} --help`)}\` for details`);
  }
  if (e.hint) lines.push(`hint: ${runnable(e.hint)}`);
  if (!(err instanceof CliError) && io.env.GCFAAS_DEBUG && err instanceof Error && err.stack) lines.push(err.stack);
  io.stderr.write(`${lines.join("\n")}\n`);
  if (json) {
    const body = { error: { code: e.code, message: e.message, ...(e.details.length ? { details: e.details } : {}) } };
    io.stdout.write(`${JSON.stringify(body, null, 2)}\n`);
  }
  return e.exitCode;
}

function defaultIo(): Io {
  return { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env, cwd: process.cwd() };
}

/**
 * The message for an argument a command does not take. JSON where a command takes a body is most
 * likely meant as the body (`--json` formats gcfaas's own output, as curl users may not guess).
 */
function unexpected(arg: string, options: Record<string, unknown>, json: boolean): string {
  const base = `unexpected argument "${arg}"`;
  if (!("data" in options) || !/^\s*[[{]/.test(arg)) return base;
  return `${base}; to send it as the JSON body: --data '${arg}'${json ? " (--json formats gcfaas's own output)" : ""}`;
}
