import { ok } from "../api-client.js";
import path from "node:path";
import type { Command } from "../command.js";
import { CliError, type ErrorDetail } from "../errors.js";
import type { FunctionSummary } from "../function-lookup.js";
import { isDirectory } from "../project.js";
import { changeJson, changeLine, summary, type ApplyContext, type Change } from "../stack/change.js";
import { DEFAULT_STACK_FILE, loadStack } from "../stack/load.js";
import { planFunction, type PlanOptions } from "../stack/plan-function.js";
import { planEndpoints, planSchedules, planTriggers } from "../stack/plan-records.js";
import { readFunctionState, type FunctionState } from "../stack/service-state.js";

export const up: Command = {
  name: "up",
  summary: "make the service match gcfaas.yml: create, update and rebuild what it declares",
  usage: "up [-f FILE] [--dry-run] [--prune] [--update-secrets] [--max-wait SECONDS]",
  help: [
    `-f, --file FILE      the stack file (default ./${DEFAULT_STACK_FILE})`,
    "--dry-run            print what would change; change nothing",
    "--prune              also delete what the file's functions have and the file does not mention",
    "                     (endpoints, schedules, triggers, secrets, variables); never whole functions",
    "--update-secrets     set every declared secret from the environment, even those that exist",
    "--max-wait SECONDS   give up following a build after this long (default 900)",
    "",
    "Running it twice changes nothing the second time. A folder is rebuilt only when its content",
    "changed since the build up (or deploy) last made from it. Secret values come from the environment",
    "variable of the secret's name, never from the file. Without --prune, what the file does not",
    "mention is left alone and listed. See docs/cli.md, \"The stack file\".",
  ],
  examples: ["gcfaas up", "gcfaas up --dry-run", "gcfaas up -f deploy/gcfaas.yml --prune"],
  options: {
    file: { type: "string", short: "f" },
    "dry-run": { type: "boolean" },
    prune: { type: "boolean" },
    "update-secrets": { type: "boolean" },
    "max-wait": { type: "string" },
  },
  args: [0, 0],
  async run(ctx, a) {
    const file = path.resolve(ctx.cwd, a.str("file") ?? DEFAULT_STACK_FILE);
    const { stack } = await loadStack(file);
    const dryRun = a.flag("dry-run");
    const api = await ctx.api();
    const o: PlanOptions = { prune: a.flag("prune"), updateSecrets: a.flag("update-secrets"), env: ctx.env, problems: [] };

    const all = await ok(api.GET("/v1/function/list"));
    const named = (n: string) => all.filter((f) => f.name === n);
    const declared = Object.entries(stack.functions);
    const states = new Map<string, FunctionState>();
    for (const [name] of declared) {
      const same = named(name);
      if (same.length > 1) o.problems.push({ field: `functions.${name}`, message: `${same.length} functions are named ${name} (${same.map((f) => f.id).join(", ")}); rename or delete one` });
      else if (same[0]) states.set(name, await readFunctionState(api, same[0].id));
    }
    // A trigger's next function: one of the file, else one the account has (by name, unique).
    const nextIds = new Map([...states].map(([n, s]) => [n, s.id]));
    for (const [name, fn] of declared)
      for (const t of fn.triggers ?? []) {
        if (t.next in stack.functions || nextIds.has(t.next)) continue;
        const same = named(t.next);
        if (same.length === 1) nextIds.set(t.next, same[0]!.id);
        else o.problems.push({ field: `functions.${name}.triggers`, message: same.length ? `${same.length} functions are named ${t.next}; give it a unique name` : `next function ${t.next} is neither in the file nor on the service` });
      }

    const changes: Change[] = [];
    const triggers: Change[] = [];
    for (const [name, fn] of declared) {
      const shown = fn.folder ?? `./${name}`;
      const abs = path.resolve(path.dirname(file), shown);
      if (!(await isDirectory(abs))) {
        o.problems.push({ field: `functions.${name}.folder`, message: `${shown} is not a folder (relative to ${path.basename(file)})` });
        continue;
      }
      const state = states.get(name);
      changes.push(...(await planFunction(name, fn, { abs, shown }, state, o)));
      changes.push(...planEndpoints(name, fn, state, o.prune), ...planSchedules(name, fn, state, o.prune));
      triggers.push(...planTriggers(name, fn, state, nextIds, o.prune));
    }
    changes.push(...triggers, ...unmentioned(all, stack.functions));
    if (o.problems.length > 0) throw problemsError(o.problems, file);

    if (dryRun) {
      ctx.out.result({ dryRun: true, changes: changes.map(changeJson) }, () => {
        for (const c of changes) ctx.out.line(changeLine(c, true));
        ctx.out.line(summary(changes, true));
      });
      return 0;
    }
    const run: ApplyContext = { ctx, api, ids: nextIds, maxWaitSeconds: a.int("max-wait") ?? 900 };
    for (const c of changes) {
      if (c.apply) {
        const said = await c.apply(run);
        if (said) c.detail = c.detail ? `${c.detail} (${said})` : said;
      }
      if (!ctx.out.json) ctx.out.line(changeLine(c, false));
    }
    ctx.out.result({ dryRun: false, changes: changes.map(changeJson) }, () => ctx.out.line(summary(changes, false)));
    return 0;
  },
};

/** Functions the account has and the file does not name: never touched, even with --prune. */
function unmentioned(all: readonly FunctionSummary[], declared: Record<string, unknown>): Change[] {
  return all
    .filter((f) => !(f.name in declared))
    .map((f): Change => ({ verb: "leave", kind: "function", fn: f.name, id: f.id, detail: "not in the file (gcfaas delete removes a function)" }));
}

function problemsError(problems: ErrorDetail[], file: string): CliError {
  return new CliError("stack_not_applied", `${path.basename(file)} cannot be applied as it is; nothing was changed`, problems, 1);
}
