import fs from "node:fs/promises";
import path from "node:path";
import type { Context } from "./command.js";
import { CliError, UsageError } from "./errors.js";
import { functionIdFor } from "./function-lookup.js";
import { LANG_CODES, type LangCode } from "./langs.js";

/** The file `init` and `deploy` keep in a function folder; it is never uploaded. */
export const PROJECT_FILE = ".gcfaas.json";

export interface ProjectFile {
  functionId?: string;
  name?: string;
  lang?: LangCode;
  /** `up`: the content hash of the folder (cli/zip.ts) as of `buildId`, the build made from it. */
  sourceHash?: string;
  buildId?: string;
}

export async function isDirectory(p: string): Promise<boolean> {
  try {
    return (await fs.stat(p)).isDirectory();
  } catch {
    return false;
  }
}

export async function readProject(dir: string): Promise<ProjectFile | undefined> {
  let text: string;
  try {
    text = await fs.readFile(path.join(dir, PROJECT_FILE), "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw err;
  }
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text) as Record<string, unknown>;
    if (!raw || typeof raw !== "object" || Array.isArray(raw)) throw new Error("not an object");
  } catch (err) {
    throw new CliError("bad_project_file", `${path.join(dir, PROJECT_FILE)} is not valid JSON (${(err as Error).message})`);
  }
  const out: ProjectFile = {};
  if (typeof raw.functionId === "string" && raw.functionId) out.functionId = raw.functionId;
  if (typeof raw.name === "string" && raw.name) out.name = raw.name;
  if (typeof raw.lang === "string" && (LANG_CODES as readonly string[]).includes(raw.lang)) out.lang = raw.lang as LangCode;
  if (typeof raw.sourceHash === "string" && raw.sourceHash) out.sourceHash = raw.sourceHash;
  if (typeof raw.buildId === "string" && raw.buildId) out.buildId = raw.buildId;
  return out;
}

export async function writeProject(dir: string, project: ProjectFile): Promise<void> {
  const ordered: ProjectFile = {};
  if (project.functionId) ordered.functionId = project.functionId;
  if (project.name) ordered.name = project.name;
  if (project.lang) ordered.lang = project.lang;
  if (project.sourceHash && project.buildId) {
    ordered.sourceHash = project.sourceHash;
    ordered.buildId = project.buildId;
  }
  await fs.writeFile(path.join(dir, PROJECT_FILE), `${JSON.stringify(ordered, null, 2)}\n`);
}

/** A function name the API accepts (1–64 letters or digits) made from a folder name. */
export function nameFromFolder(dir: string): string {
  const cleaned = path.basename(path.resolve(dir)).replace(/[^A-Za-z0-9]/g, "").slice(0, 64);
  return cleaned || "function";
}

/** Guesses the language of a function folder from the files each runtime expects. */
export async function detectLang(dir: string): Promise<LangCode | undefined> {
  const names = new Set(await fs.readdir(dir));
  if (names.has("handler.py") || names.has("requirements.txt")) return "py";
  if (names.has("handler.js") || names.has("package.json")) return "js";
  if (names.has("go.mod") || [...names].some((n) => n.endsWith(".go"))) return "go";
  if (names.has("handler.rb") || names.has("Gemfile")) return "rb";
  if (names.has("Cargo.toml")) return "rs";
  if ([...names].some((n) => n.endsWith(".csproj") || n.endsWith(".cs"))) return "cs";
  return undefined;
}

export interface FunctionRef {
  id: string;
  /** Set when the reference was a folder holding a project file. */
  dir?: string;
}

/**
 * A function given on the command line: a function id, a function name, or a folder whose
 * `.gcfaas.json` names one (`gcfaas invoke .`). A folder without a deployed function is a usage error.
 */
export async function resolveFunctionRef(ctx: Context, ref: string, command: string): Promise<FunctionRef> {
  const looksLikePath = ref === "." || ref === ".." || ref.includes("/") || ref.includes(path.sep);
  const dir = path.resolve(ctx.cwd, ref);
  if (await isDirectory(dir)) {
    const project = await readProject(dir);
    if (project?.functionId) return { id: project.functionId, dir };
    if (looksLikePath || project) throw new UsageError(`${ref} has no deployed function yet (no functionId in ${PROJECT_FILE}); run \`gcfaas deploy ${ref}\` first`, command);
  } else if (looksLikePath) {
    throw new UsageError(`${ref} is not a folder`, command);
  }
  return { id: await functionIdFor(await ctx.api(), ref) };
}
