import fs from "node:fs/promises";
import path from "node:path";
import type { LangCode } from "./langs.js";
import { RUNTIME_DIR } from "../agent/runtimes/languages.js";

/** `init` templates are the documented examples themselves: examples/<language>/hello. */
export const templateDir = (lang: LangCode) => path.join(import.meta.dirname, "..", "examples", RUNTIME_DIR[lang], "hello");

/** Copies the template of `lang` into `dir`; returns the relative paths written. */
export async function writeTemplate(lang: LangCode, dir: string): Promise<string[]> {
  const src = templateDir(lang);
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
