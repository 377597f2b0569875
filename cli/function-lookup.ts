import { ok, type ApiClient } from "./api-client.js";
import { cmd } from "./cli-name.js";
import { CliError } from "./errors.js";
import { fmtTime } from "./output.js";
import type { Answer } from "../client/index.js";

export type FunctionSummary = Answer<"/v1/function/list", "get">[number];

/** Every function of the account. */
export const listFunctions = (api: ApiClient, tag?: string) => ok(api.GET("/v1/function/list", { params: { query: { tag } } }));

/** The functions of the account called `name` (names are not unique: the API allows two). */
export async function functionsNamed(api: ApiClient, name: string): Promise<FunctionSummary[]> {
  const all = await listFunctions(api);
  return all.filter((f) => f.name === name);
}

/** One line per function, for errors and warnings that must tell same-named functions apart. */
export function describeFunctions(fns: readonly Pick<FunctionSummary, "id" | "name" | "lang" | "createdAt">[]): { field: string; message: string }[] {
  return fns.map((f) => ({ field: f.id, message: `${f.name}, ${f.lang}, created ${fmtTime(f.createdAt)}` }));
}

/**
 * A function id for `ref`, which is an id or a name. An id wins over a name (ids and names share
 * an alphabet, so a name could look like an id); two functions of one name are an error listing both.
 */
export async function functionIdFor(api: ApiClient, ref: string): Promise<string> {
  const all = await listFunctions(api);
  if (all.some((f) => f.id === ref)) return ref;
  const named = all.filter((f) => f.name === ref);
  if (named.length === 1) return named[0]!.id;
  if (named.length > 1)
    throw new CliError(
      "ambiguous_name",
      `${named.length} functions are named ${ref}; give the id of the one you mean`,
      describeFunctions(named),
      1,
      `rename one with \`${cmd(`edit ${named[1]!.id} --name NEWNAME`)}\`, or remove one with \`${cmd(`delete ${named[1]!.id}`)}\``,
    );
  throw new CliError("not_found", `no function has the id or name ${ref}`, [], 1, `list your functions with \`${cmd("list")}\``);
}

/**
 * Labels function ids for tables: the name when it is the only function of that name, else
 * `name (id)`; an id no function has any more stays as it is.
 */
export async function functionLabels(api: ApiClient): Promise<(id: string | null | undefined) => string> {
  const all = await listFunctions(api);
  const byId = new Map(all.map((f) => [f.id, f]));
  const count = new Map<string, number>();
  for (const f of all) count.set(f.name, (count.get(f.name) ?? 0) + 1);
  return (id) => {
    if (!id) return "-";
    const f = byId.get(id);
    if (!f) return id;
    return count.get(f.name) === 1 ? f.name : `${f.name} (${f.id})`;
  };
}
