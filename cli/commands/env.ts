import { ok } from "../api-client.js";
import type { Args, Command, Context } from "../command.js";
import { UsageError } from "../errors.js";
import { resolveFunctionRef } from "../project.js";

/** `--function`: a function id or a deployed folder; the current folder's function by default. */
export const FUNCTION_OPTION = { function: { type: "string", short: "f" } } as const;
export const FUNCTION_HELP = "--function, -f ID|DIR  the function (id, or a folder deployed with gcfaas deploy); default: the current folder's";

export async function targetFunction(ctx: Context, a: Args): Promise<string> {
  return (await resolveFunctionRef(ctx, a.str("function") ?? ".", a.command)).id;
}

type Vars = Record<string, string>;
const envPath = (id: string) => ({ params: { path: { id } } });

const listEnv: Command = {
  name: "list",
  summary: "list the function's environment variables",
  usage: "env list [--function ID|DIR]",
  help: [FUNCTION_HELP],
  examples: ["gcfaas env list", "gcfaas env list -f 01jc9w0q4t"],
  options: FUNCTION_OPTION,
  args: [0, 0],
  async run(ctx, a) {
    const vars = await ok((await ctx.api()).GET("/v1/function/{id}/env", envPath(await targetFunction(ctx, a))));
    ctx.out.result(vars, () => {
      const names = Object.keys(vars);
      if (names.length === 0) ctx.out.line("(no variables)");
      for (const name of names) ctx.out.line(`${name}=${vars[name]}`);
    });
  },
};

const setEnv: Command = {
  name: "set",
  summary: "set environment variables (others are kept); they apply from the function's next call",
  usage: "env set NAME=VALUE... [--function ID|DIR]",
  help: [FUNCTION_HELP, "A value may be empty (NAME=). Secrets go through `gcfaas secret set`, never here."],
  examples: ["gcfaas env set API_URL=https://api.example.com REGION=eu"],
  options: FUNCTION_OPTION,
  args: [1, 64],
  async run(ctx, a) {
    const given: Vars = {};
    for (const pair of a.positionals) {
      const at = pair.indexOf("=");
      if (at <= 0) throw new UsageError(`"${pair}" is not NAME=VALUE`, a.command);
      given[pair.slice(0, at)] = pair.slice(at + 1);
    }
    const id = await targetFunction(ctx, a);
    const api = await ctx.api();
    const vars = { ...(await ok(api.GET("/v1/function/{id}/env", envPath(id)))), ...given };
    await ok(api.PUT("/v1/function/{id}/env", { ...envPath(id), body: vars }));
    ctx.out.result(vars, () => ctx.out.line(`set ${Object.keys(given).join(", ")} (the function has ${Object.keys(vars).length} variables)`));
  },
};

const unsetEnv: Command = {
  name: "unset",
  summary: "remove environment variables",
  usage: "env unset NAME... [--function ID|DIR]",
  help: [FUNCTION_HELP],
  examples: ["gcfaas env unset REGION"],
  options: FUNCTION_OPTION,
  args: [1, 64],
  async run(ctx, a) {
    const id = await targetFunction(ctx, a);
    const api = await ctx.api();
    const vars = await ok(api.GET("/v1/function/{id}/env", envPath(id)));
    const missing = a.positionals.filter((n) => !Object.hasOwn(vars, n));
    if (missing.length) throw new UsageError(`not set: ${missing.join(", ")}`, a.command);
    for (const name of a.positionals) delete vars[name];
    await ok(api.PUT("/v1/function/{id}/env", { ...envPath(id), body: vars }));
    ctx.out.result(vars, () => ctx.out.line(`unset ${a.positionals.join(", ")} (the function has ${Object.keys(vars).length} variables)`));
  },
};

export const env: Command = {
  name: "env",
  summary: "manage a function's environment variables: list, set, unset",
  usage: "env list|set|unset ...",
  subcommands: [listEnv, setEnv, unsetEnv],
};
