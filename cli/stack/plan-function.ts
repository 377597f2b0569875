import { ok } from "../api-client.js";
import { followBuild } from "../build-follow.js";
import { uploadBuild } from "../build-upload.js";
import { CliError, type ErrorDetail } from "../errors.js";
import { apiLang, LANG_NAMES } from "../langs.js";
import { checkEntryAtTop } from "../deploy-target.js";
import { readProject, writeProject } from "../project.js";
import { zipFolderContents } from "../zip.js";
import { CAPABILITY_DEFAULTS } from "../../shared/schemas/function.js";
import { idOf, type Change } from "./change.js";
import type { StackFunction } from "./schema.js";
import type { FunctionState } from "./service-state.js";

export interface PlanOptions {
  prune: boolean;
  updateSecrets: boolean;
  /** The environment `up` runs in: where secret values come from. */
  env: Record<string, string | undefined>;
  /** Problems found while planning; `up` changes nothing when there is one. */
  problems: ErrorDetail[];
}

/** The function record itself, its build, capabilities, variables and secrets. */
export async function planFunction(name: string, decl: StackFunction, folder: StackFolder, state: FunctionState | undefined, o: PlanOptions): Promise<Change[]> {
  const changes: Change[] = [];
  if (!state) {
    changes.push({
      verb: "create",
      kind: "function",
      fn: name,
      detail: LANG_NAMES[decl.lang],
      async apply(run) {
        const body = { name, lang: apiLang(decl.lang), type: "DOCKER" as const, ...(decl.description !== undefined ? { description: decl.description } : {}) };
        const { id } = await ok(run.api.POST("/v1/function", { body }));
        run.ids.set(name, id);
        return id;
      },
    });
  } else if (state.lang !== decl.lang) {
    o.problems.push({ field: `functions.${name}.lang`, message: `function ${name} (${state.id}) is ${state.lang}; a function's language cannot change` });
  } else if (decl.description !== undefined && decl.description !== state.description) {
    changes.push({ verb: "update", kind: "function", fn: name, id: state.id, detail: "description", apply: (run) => ok(run.api.PATCH("/v1/function/{id}", { params: { path: { id: state.id } }, body: { description: decl.description } })).then(() => undefined) });
  } else changes.push({ verb: "unchanged", kind: "function", fn: name, id: state.id });

  changes.push(await planBuild(name, decl, folder, state, o));
  changes.push(...planCapabilities(name, decl, state));
  changes.push(...planEnv(name, decl, state, o));
  changes.push(...planSecrets(name, decl, state, o));
  return changes;
}

/** A function's folder: where it is, and how the file names it (for messages). */
export interface StackFolder {
  abs: string;
  shown: string;
}

async function planBuild(name: string, decl: StackFunction, { abs, shown: rel }: StackFolder, state: FunctionState | undefined, o: PlanOptions): Promise<Change> {
  const { zip, files, hash } = await zipFolderContents(abs);
  if (files.length === 0) o.problems.push({ field: `functions.${name}.folder`, message: `${rel} holds no files to build` });
  else await checkEntryAtTop(abs, rel, decl.lang).catch((err: Error) => o.problems.push({ field: `functions.${name}.folder`, message: err.message }));
  const project = (await readProject(abs)) ?? {};
  const newest = state?.newestBuild;
  const same = state && project.functionId === state.id && project.sourceHash === hash && newest !== undefined && newest.id === project.buildId && newest.status === "SUCCESS";
  if (same && newest) return { verb: "unchanged", kind: "build", fn: name, id: newest.id, detail: `${rel} is as built in ${newest.id}` };
  const why = !state
    ? `from ${rel}`
    : project.functionId === state.id && project.sourceHash && project.sourceHash !== hash
      ? `${rel} changed`
      : newest?.status === "FAILED" || newest?.id !== project.buildId
        ? `the newest build is not one made from ${rel} as it is`
        : `${rel} has no build recorded`;
  return {
    verb: state ? "rebuild" : "create",
    kind: "build",
    fn: name,
    detail: why,
    async apply(run) {
      const id = idOf(run, name);
      const buildId = await uploadBuild(run.api, id, zip);
      const build = await followBuild(run.ctx, run.api, buildId, { maxWaitSeconds: run.maxWaitSeconds });
      if (build.status !== "SUCCESS")
        throw new CliError("build_failed", `build ${buildId} of function ${name} FAILED${build.log.length ? `: ${build.log[build.log.length - 1]}` : ""}`, [], 1, `fix the error, then run \`gcfaas up\` again; the whole log: \`gcfaas build ${buildId} --log\``);
      await writeProject(abs, { ...project, functionId: id, name, lang: decl.lang, sourceHash: hash, buildId });
      return `build ${buildId} SUCCESS`;
    },
  };
}

function planCapabilities(name: string, decl: StackFunction, state: FunctionState | undefined): Change[] {
  if (!decl.capabilities) return [];
  const current = state?.capabilities ?? CAPABILITY_DEFAULTS;
  const diff = Object.entries(decl.capabilities).filter(([k, v]) => v !== undefined && current[k as keyof typeof current] !== v);
  if (diff.length === 0) return [{ verb: "unchanged", kind: "capabilities", fn: name }];
  return [
    {
      verb: "update",
      kind: "capabilities",
      fn: name,
      detail: diff.map(([k, v]) => `${k} ${current[k as keyof typeof current]} -> ${v}`).join(", "),
      apply: (run) => ok(run.api.POST("/v1/function/{id}/capabilities", { params: { path: { id: idOf(run, name) } }, body: Object.fromEntries(diff) })).then(() => undefined),
    },
  ];
}

function planEnv(name: string, decl: StackFunction, state: FunctionState | undefined, o: PlanOptions): Change[] {
  const current = state?.env ?? {};
  if (!decl.env && !(o.prune && Object.keys(current).length > 0)) return [];
  const declared = decl.env ?? {};
  const desired = o.prune ? { ...declared } : { ...current, ...declared };
  const set = Object.keys(declared).filter((k) => current[k] !== declared[k]);
  const removed = Object.keys(current).filter((k) => !(k in desired));
  const kept = o.prune ? [] : Object.keys(current).filter((k) => !(k in declared));
  const keptNote = kept.length ? `kept ${kept.join(", ")} (not in the file; --prune removes them)` : "";
  if (set.length === 0 && removed.length === 0) return [{ verb: "unchanged", kind: "env", fn: name, ...(keptNote ? { detail: keptNote } : {}) }];
  const detail = [set.length ? `set ${set.join(", ")}` : "", removed.length ? `removed ${removed.join(", ")}` : "", keptNote].filter(Boolean).join("; ");
  return [{ verb: "update", kind: "env", fn: name, detail, apply: (run) => ok(run.api.PUT("/v1/function/{id}/env", { params: { path: { id: idOf(run, name) } }, body: desired })).then(() => undefined) }];
}

function planSecrets(name: string, decl: StackFunction, state: FunctionState | undefined, o: PlanOptions): Change[] {
  const current = new Set(state?.secrets ?? []);
  const declared = decl.secrets ?? [];
  const changes: Change[] = [];
  for (const secret of declared) {
    const exists = current.has(secret);
    if (exists && !o.updateSecrets) {
      changes.push({ verb: "unchanged", kind: "secret", fn: name, key: secret });
      continue;
    }
    const value = o.env[secret];
    if (value === undefined || value === "") {
      o.problems.push({
        field: `functions.${name}.secrets`,
        message: exists ? `--update-secrets: $${secret} is not set` : `secret ${secret} is not on the service yet and $${secret} is not set: export it, then run up again`,
      });
      continue;
    }
    changes.push({
      verb: exists ? "update" : "create",
      kind: "secret",
      fn: name,
      key: secret,
      detail: `from $${secret}`,
      apply: (run) => ok(run.api.PUT("/v1/function/{id}/secrets/{name}", { params: { path: { id: idOf(run, name), name: secret } }, body: { value } })).then(() => undefined),
    });
  }
  for (const extra of [...current].filter((s) => !declared.includes(s))) {
    if (o.prune)
      changes.push({ verb: "delete", kind: "secret", fn: name, key: extra, apply: (run) => ok(run.api.DELETE("/v1/function/{id}/secrets/{name}", { params: { path: { id: idOf(run, name), name: extra } } })).then(() => undefined) });
    else changes.push({ verb: "leave", kind: "secret", fn: name, key: extra, detail: "not in the file (--prune deletes it)" });
  }
  return changes;
}
