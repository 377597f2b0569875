import { ok } from "../api-client.js";
import { defined, deleteCommand, type Command } from "../command.js";
import { CliError, UsageError } from "../errors.js";

const listTags: Command = {
  name: "list",
  summary: "list your tags",
  usage: "tags list",
  examples: ["gcfaas tags list"],
  args: [0, 0],
  async run(ctx) {
    const tags = await ok((await ctx.api()).GET("/v1/tag/list"));
    ctx.out.result(tags, () =>
      ctx.out.table(tags, [
        { title: "ID", value: (t) => t.id },
        { title: "COLOR", value: (t) => t.color },
        { title: "NAME", value: (t) => t.name },
      ], "(no tags)"),
    );
  },
};

const createTag: Command = {
  name: "create",
  summary: "create a tag",
  usage: "tags create <name> [--color #rrggbb]",
  help: ["--color #rrggbb   default #808080"],
  examples: ["gcfaas tags create production --color '#ff0000'"],
  options: { color: { type: "string", short: "c" } },
  args: [1, 1],
  async run(ctx, a) {
    const name = a.pos(0, "<name>");
    const res = await ok((await ctx.api()).POST("/v1/tag", { body: defined({ name, color: a.str("color") }) }));
    ctx.out.result(res, () => ctx.out.line(`created tag ${name} (${res.id})`));
  },
};

const editTag: Command = {
  name: "edit",
  summary: "rename or recolor a tag",
  usage: "tags edit <tag-id> [--name NAME] [--color #rrggbb]",
  examples: ["gcfaas tags edit 01jc9w0q4t --color '#00aa00'"],
  options: { name: { type: "string", short: "n" }, color: { type: "string", short: "c" } },
  args: [1, 1],
  async run(ctx, a) {
    const id = a.pos(0, "<tag-id>");
    const body = defined({ name: a.str("name"), color: a.str("color") });
    if (Object.keys(body).length === 0) throw new UsageError("nothing to change: give --name or --color", "tags edit");
    const api = await ctx.api();
    await ok(api.PATCH("/v1/tag/{id}", { params: { path: { id } }, body }));
    const tag = (await ok(api.GET("/v1/tag/list"))).find((t) => t.id === id);
    if (!tag) throw new CliError("not_found", `tag ${id} not found after editing it`);
    ctx.out.result(tag, () => ctx.out.line(`updated tag ${tag.name} (${tag.id}, ${tag.color})`));
  },
};

const deleteTag = deleteCommand({ group: "tags", resource: "tag", summary: "delete a tag (it is removed from every function, trigger and endpoint)", example: "01jc9w0q4t", remove: (api, id) => ok(api.DELETE("/v1/tag/{id}", { params: { path: { id } } })) });

export const tags: Command = {
  name: "tags",
  summary: "manage tags: list, create, edit, delete",
  usage: "tags list|create|edit|delete ...",
  subcommands: [listTags, createTag, editTag, deleteTag],
};
