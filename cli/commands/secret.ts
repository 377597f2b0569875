import { ok } from "../api-client.js";
import type { Command } from "../command.js";
import { UsageError } from "../errors.js";
import { FUNCTION_HELP, FUNCTION_OPTION, targetFunction } from "./env.js";

const listSecrets: Command = {
  name: "list",
  summary: "list the function's secrets (names only: a secret is never shown again)",
  usage: "secret list [--function ID|DIR]",
  help: [FUNCTION_HELP],
  examples: ["gcfaas secret list"],
  options: FUNCTION_OPTION,
  args: [0, 0],
  async run(ctx, a) {
    const list = await ok((await ctx.api()).GET("/v1/function/{id}/secrets", { params: { path: { id: await targetFunction(ctx, a) } } }));
    ctx.out.result(list, () =>
      ctx.out.table(list, [
        { title: "UPDATED", value: (s) => s.updatedAt },
        { title: "NAME", value: (s) => s.name },
      ], "(no secrets)"),
    );
  },
};

const setSecret: Command = {
  name: "set",
  summary: "create or replace a secret, its value read from standard input",
  usage: "secret set NAME [--function ID|DIR] < value",
  help: [
    FUNCTION_HELP,
    "The value is read from standard input, never from an argument (arguments end up in shell",
    "history and process lists). One trailing newline is dropped: `echo` and here-strings work.",
  ],
  examples: ["printf %s \"$STRIPE_KEY\" | gcfaas secret set STRIPE_KEY", "gcfaas secret set DB_PASSWORD < password.txt"],
  options: FUNCTION_OPTION,
  args: [1, 1],
  async run(ctx, a) {
    const name = a.pos(0, "NAME");
    const id = await targetFunction(ctx, a);
    if ((ctx.stdin as { isTTY?: boolean }).isTTY) ctx.out.note(`type the value of ${name}, then Ctrl-D`);
    const chunks: Buffer[] = [];
    for await (const c of ctx.stdin) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(String(c)));
    const value = Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "");
    if (value === "") throw new UsageError("no value on standard input", a.command);
    await ok((await ctx.api()).PUT("/v1/function/{id}/secrets/{name}", { params: { path: { id, name } }, body: { value } }));
    ctx.out.result({ name, set: true }, () => ctx.out.line(`set secret ${name}; it applies from the function's next call`));
  },
};

const deleteSecret: Command = {
  name: "delete",
  summary: "delete a secret",
  usage: "secret delete NAME [--function ID|DIR]",
  help: [FUNCTION_HELP],
  examples: ["gcfaas secret delete STRIPE_KEY"],
  options: FUNCTION_OPTION,
  args: [1, 1],
  async run(ctx, a) {
    const name = a.pos(0, "NAME");
    await ok((await ctx.api()).DELETE("/v1/function/{id}/secrets/{name}", { params: { path: { id: await targetFunction(ctx, a), name } } }));
    ctx.out.result({ name, deleted: true }, () => ctx.out.line(`deleted secret ${name}`));
  },
};

export const secret: Command = {
  name: "secret",
  summary: "manage a function's secrets: list, set (from standard input), delete",
  usage: "secret list|set|delete ...",
  subcommands: [listSecrets, setSecret, deleteSecret],
};
