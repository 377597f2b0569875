import type { Command } from "./command.js";
import type { Column } from "./output.js";
import { functionLabels } from "./function-lookup.js";
import { resolveFunctionRef } from "./project.js";
import type { ApiClient } from "./api-client.js";

/**
 * A list command over one of the API's paged lists (builds, triggers, endpoints): the same
 * `--function`, `--page` and `--limit` options, a table, and a footer pointing at the next page.
 */
export function pagedListCommand<T>(o: {
  name: string;
  /** Command path as typed, e.g. "triggers list". */
  usageName: string;
  summary: string;
  /** Plural noun for messages: "builds". */
  what: string;
  /** One page of the list operation, e.g. `ok(api.GET("/v1/build/list", { params: { query } }))`. */
  list: (api: ApiClient, query: { functionId?: string; page: number; limit: number }) => Promise<{ results: T[]; pageCount: number; totalCount: number }>;
  functionHelp: string;
  limitHelp: string;
  example: string;
  columns: Column<T>[];
  /** Columns holding function ids, shown as function names (`--json` keeps the ids). */
  functionColumns?: Partial<Record<string, (row: T) => string | null | undefined>>;
}): Command {
  return {
    name: o.name,
    summary: o.summary,
    usage: `${o.usageName} [--function ID|NAME|DIR] [--page N] [--limit N]`,
    help: [`--function ID|NAME|DIR   ${o.functionHelp}`, "--page N            page (default 1)", `--limit N           ${o.limitHelp}`],
    examples: [o.example],
    options: { function: { type: "string", short: "f" }, page: { type: "string" }, limit: { type: "string", short: "n" } },
    args: [0, 0],
    async run(ctx, a) {
      const fn = a.str("function");
      const functionId = fn === undefined ? undefined : (await resolveFunctionRef(ctx, fn, o.usageName)).id;
      const current = a.int("page") ?? 1;
      const page = await o.list(await ctx.api(), { functionId, page: current, limit: a.int("limit") ?? 20 });
      const label = o.functionColumns && !ctx.out.json && page.results.length ? await functionLabels(await ctx.api()) : undefined;
      const columns = o.columns.map((c) => {
        const id = o.functionColumns?.[c.title];
        return label && id ? { title: c.title, value: (row: T) => label(id(row)) } : c;
      });
      ctx.out.result(page, () => {
        ctx.out.table(page.results, columns, `(no ${o.what})`);
        if (page.pageCount > 1)
          ctx.out.note(`page ${current} of ${page.pageCount} (${page.totalCount} ${o.what}); more with --page ${Math.min(current + 1, page.pageCount)}`);
      });
    },
  };
}
