import { parseArgs, type ParseArgsConfig } from "node:util";
import type { ApiClient } from "./api-client.js";
import type { Env } from "./config-store.js";
import { UsageError } from "./errors.js";
import type { Output } from "./output.js";

export type OptionSpec = NonNullable<ParseArgsConfig["options"]>;

/** What every command gets: where to print, the environment, and a lazily configured API client. */
export interface Context {
  out: Output;
  env: Env;
  cwd: string;
  stdin: NodeJS.ReadableStream;
  /** `--url` / `--token` given on the command line. */
  flags: { url?: string | undefined; token?: string | undefined };
  api(): Promise<ApiClient>;
}

export interface Command {
  name: string;
  summary: string;
  /** Synopsis after `gcfaas `, e.g. `deploy <dir> [--name NAME]`. */
  usage: string;
  /** Option descriptions and notes, one per line. */
  help?: string[];
  examples?: string[];
  options?: OptionSpec;
  /** Bounds on the number of positional arguments. */
  args?: readonly [min: number, max: number];
  subcommands?: Command[];
  run?(ctx: Context, args: Args): Promise<number | void>;
}

/** Options every command takes. */
export const GLOBAL_OPTIONS = {
  json: { type: "boolean" },
  url: { type: "string" },
  token: { type: "string" },
  help: { type: "boolean", short: "h" },
} as const satisfies OptionSpec;

type Values = Record<string, string | boolean | (string | boolean)[] | undefined>;

/** Parsed arguments with typed getters that turn malformed values into usage errors (exit 2). */
export class Args {
  constructor(
    readonly command: string,
    readonly positionals: string[],
    readonly values: Values,
  ) {}

  static parse(command: string, argv: string[], options: OptionSpec): Args {
    const all: OptionSpec = { ...GLOBAL_OPTIONS, ...options };
    try {
      const { values, positionals } = parseArgs({ args: joinNegativeValues(argv, all), options: all, allowPositionals: true, strict: true });
      return new Args(command, positionals, values as Values);
    } catch (err) {
      throw new UsageError((err as Error).message.replace(/\. To specify a positional argument.*$/s, ""), command);
    }
  }

  has(name: string): boolean {
    const v = this.values[name];
    return v !== undefined && !(Array.isArray(v) && v.length === 0);
  }

  pos(i: number, what: string): string {
    const v = this.positionals[i];
    if (v === undefined || v === "") throw new UsageError(`missing ${what}`, this.command);
    return v;
  }

  str(name: string): string | undefined {
    const v = this.values[name];
    return typeof v === "string" ? v : undefined;
  }

  flag(name: string): boolean {
    return this.values[name] === true;
  }

  list(name: string): string[] {
    const v = this.values[name];
    if (Array.isArray(v)) return v.map(String);
    return typeof v === "string" ? [v] : [];
  }

  int(name: string): number | undefined {
    const v = this.str(name);
    if (v === undefined) return undefined;
    if (!/^-?\d+$/.test(v.trim())) throw new UsageError(`--${name} must be an integer, got "${v}"`, this.command);
    return Number(v);
  }

  num(name: string): number | undefined {
    const v = this.str(name);
    if (v === undefined) return undefined;
    const n = Number(v);
    if (v.trim() === "" || !Number.isFinite(n)) throw new UsageError(`--${name} must be a number, got "${v}"`, this.command);
    return n;
  }

  /** `--name true|false` (also yes/no, 1/0). */
  bool(name: string): boolean | undefined {
    const v = this.str(name);
    if (v === undefined) return undefined;
    const s = v.toLowerCase();
    if (["true", "yes", "1", "on"].includes(s)) return true;
    if (["false", "no", "0", "off"].includes(s)) return false;
    throw new UsageError(`--${name} must be true or false, got "${v}"`, this.command);
  }
}

/** `--daily-limit -1` → `--daily-limit=-1`: parseArgs would take `-1` for an option of its own. */
function joinNegativeValues(argv: string[], options: OptionSpec): string[] {
  const out: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const next = argv[i + 1];
    const spec = a.startsWith("--") ? options[a.slice(2)] : undefined;
    if (spec?.type === "string" && next !== undefined && /^-\d+(\.\d+)?$/.test(next)) {
      out.push(`${a}=${next}`);
      i++;
    } else out.push(a);
  }
  return out;
}

/** Drops `undefined` members, so that request bodies carry only what the user gave. */
export function defined<T extends Record<string, unknown>>(o: T): Defined<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Defined<T>;
}

/** `T` with the members that may be `undefined` made optional instead; the others stay required. */
export type Defined<T> = { [K in keyof T as undefined extends T[K] ? never : K]: T[K] } & { [K in keyof T as undefined extends T[K] ? K : never]?: Exclude<T[K], undefined> };

/** `<group> delete <id>` for a record type: its DELETE operation (`remove`), then a one-line confirmation. */
export function deleteCommand(o: { group: string; resource: string; summary: string; example: string; remove: (api: ApiClient, id: string) => Promise<unknown> }): Command {
  return {
    name: "delete",
    summary: o.summary,
    usage: `${o.group} delete <${o.resource}-id>`,
    examples: [`gcfaas ${o.group} delete ${o.example}`],
    args: [1, 1],
    async run(ctx, a) {
      const id = a.pos(0, `<${o.resource}-id>`);
      await o.remove(await ctx.api(), id);
      ctx.out.result({ id, deleted: true }, () => ctx.out.line(`deleted ${o.resource} ${id}`));
    },
  };
}
