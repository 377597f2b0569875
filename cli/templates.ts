import { existsSync } from "node:fs";
import fs from "node:fs/promises";
import path from "node:path";
import { LANG_CODES, type LangCode } from "./langs.js";
import { RUNTIME_DIR } from "../agent/runtimes/languages.js";

/**
 * `init` templates are the documented examples themselves: examples/<language>/<template>, each
 * built and called by test/cli/templates.test.ts. A template exists in the languages that have
 * its folder.
 */
export interface Template {
  name: string;
  summary: string;
  /** How to try it once deployed (arguments after `gcfaas invoke <name>`): for every language, or per language. */
  tryWith?: string | Partial<Record<LangCode, string>>;
}

export const TEMPLATES: readonly Template[] = [
  { name: "hello", summary: "greets the caller; shows how query, headers, body, status and errors travel", tryWith: "-q name=Ada" },
  {
    name: "with-dependency",
    summary: "uses a third-party package, vendored so the build needs no network (py tabulate, js ms, go uuid, rb mustache, rs heck, cs Newtonsoft.Json)",
    tryWith: { py: "-q lang=py", js: "-q duration=2d", rb: "-q name=Ada", rs: "-q text=hello-world", cs: `--data '{"a": 1}'` },
  },
  { name: "counter", summary: "counts its calls in the function's storage (GC-Storage: each call gets the value the last one stored)" },
];

export const DEFAULT_TEMPLATE = "hello";

export const templateDir = (lang: LangCode, template = DEFAULT_TEMPLATE) => path.join(import.meta.dirname, "..", "examples", RUNTIME_DIR[lang], template);

/** The languages a template exists in. */
export const templateLangs = (t: Template): LangCode[] => LANG_CODES.filter((l) => existsSync(templateDir(l, t.name)));

export const tryWith = (t: Template, lang: LangCode): string | undefined => (typeof t.tryWith === "string" ? t.tryWith : t.tryWith?.[lang]);

export const findTemplate = (name: string): Template | undefined => TEMPLATES.find((t) => t.name === name);

/** Copies `template` of `lang` into `dir`; returns the relative paths written. */
export async function writeTemplate(lang: LangCode, dir: string, template = DEFAULT_TEMPLATE): Promise<string[]> {
  const src = templateDir(lang, template);
  const written: string[] = [];
  const copy = async (rel: string): Promise<void> => {
    for (const entry of await fs.readdir(path.join(src, rel), { withFileTypes: true })) {
      const r = rel ? path.join(rel, entry.name) : entry.name;
      if (entry.isDirectory()) {
        await fs.mkdir(path.join(dir, r), { recursive: true });
        await copy(r);
      } else if (entry.isFile()) {
        await fs.copyFile(path.join(src, r), path.join(dir, r));
        written.push(r.split(path.sep).join("/"));
      }
    }
  };
  await fs.mkdir(dir, { recursive: true });
  await copy("");
  return written.sort();
}
