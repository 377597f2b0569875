import fs from "node:fs/promises";
import path from "node:path";
import type { ApiClient } from "./api-client.js";
import { cmd } from "./cli-name.js";
import { CliError, UsageError } from "./errors.js";
import { describeFunctions, functionsNamed, type FunctionSummary } from "./function-lookup.js";
import { fmtTime } from "./output.js";
import { LANG_NAMES, parseLangCode, type LangCode } from "./langs.js";

/** The file each runtime's build looks for at the top level of the zip. */
const ENTRY_FILES: Partial<Record<LangCode, string>> = { py: "handler.py", js: "handler.js", rb: "handler.rb", rs: "Cargo.toml" };

/**
 * A folder whose entry file sits one level down (`deploy .` from the parent of `hello/`) would
 * upload a zip the build refuses with "handler.py not found at the top level": name the folder to
 * deploy instead, before uploading anything.
 */
export async function checkEntryAtTop(dir: string, dirArg: string, lang: LangCode): Promise<void> {
  const entry = ENTRY_FILES[lang];
  if (!entry) return;
  const names = await fs.readdir(dir, { withFileTypes: true });
  if (names.some((n) => n.name === entry)) return;
  for (const sub of names.filter((n) => n.isDirectory() && !n.name.startsWith("."))) {
    const found = await fs.stat(path.join(dir, sub.name, entry)).then(
      () => true,
      () => false,
    );
    if (found) {
      const inner = path.join(dirArg, sub.name);
      throw new UsageError(`${entry} is not at the top level of ${dirArg}; found ${path.join(sub.name, entry)}: deploy that folder (\`${cmd(`deploy ${inner}`)}\`), whose contents become the zip`, "deploy");
    }
  }
  // The build would fail on it: say so before a function is created and an upload made.
  throw new UsageError(`${dirArg} has no ${entry}: a ${LANG_NAMES[lang]} function needs it at the top level of its folder (see docs/runtimes.md, or start from \`${cmd(`init <dir> --lang ${lang}`)}\`)`, "deploy");
}

/**
 * A build that failed because its zip held a folder rather than that folder's contents (a zip
 * made in the console's drop zone or by hand): the hint to zip the contents.
 */
export function topLevelHint(log: readonly string[]): string | undefined {
  return log.some((l) => /at the top level of the zip/.test(l))
    ? "the zip must hold the function folder's contents, not the folder: zip from inside it (cd hello && zip -r ../hello.zip .), or let `gcfaas deploy <folder>` zip it"
    : undefined;
}

/**
 * What a deploy without a remembered function id does with a name already taken: one function of
 * that name and language is updated (the folder was deployed before from another clone, or its
 * project file was lost); otherwise a second function would be made, which needs --new.
 */
export async function existingFunctionFor(api: ApiClient, name: string, lang: LangCode, createNew: boolean): Promise<FunctionSummary | undefined> {
  if (createNew) return undefined;
  const same = await functionsNamed(api, name);
  if (same.length === 0) return undefined;
  const sameLang = same.filter((f) => safeLang(f.lang) === lang);
  if (same.length === 1 && sameLang.length === 1) return sameLang[0];
  throw new CliError(
    "name_taken",
    same.length === 1
      ? `a ${same[0]!.lang} function named ${name} exists already (created ${fmtTime(same[0]!.createdAt)}); this folder is ${lang}`
      : `${same.length} functions are named ${name}; say which one this folder updates`,
    describeFunctions(same),
    1,
    `update one with \`${cmd(`deploy <folder> --function ${same[0]!.id}`)}\`, deploy under another name with --name NAME, or create one more of the same name with --new`,
  );
}

function safeLang(lang: string): LangCode | undefined {
  try {
    return parseLangCode(lang);
  } catch {
    return undefined;
  }
}
