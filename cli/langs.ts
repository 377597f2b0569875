import { UsageError } from "./errors.js";

/** Language codes as the CLI takes them (lowercase); the API takes them uppercase. */
export const LANG_CODES = ["py", "js", "go", "rb", "rs", "cs"] as const;
export type LangCode = (typeof LANG_CODES)[number];

export const LANG_NAMES: Record<LangCode, string> = {
  py: "Python",
  js: "Node.js",
  go: "Go",
  rb: "Ruby",
  rs: "Rust",
  cs: "C#",
};

/** Longer spellings people type, mapped to the codes. */
const ALIASES: Record<string, LangCode> = {
  python: "py",
  node: "js",
  nodejs: "js",
  javascript: "js",
  golang: "go",
  ruby: "rb",
  rust: "rs",
  csharp: "cs",
  "c#": "cs",
};

export function parseLangCode(value: string, command?: string): LangCode {
  const v = value.trim().toLowerCase();
  if ((LANG_CODES as readonly string[]).includes(v)) return v as LangCode;
  const alias = ALIASES[v];
  if (alias) return alias;
  throw new UsageError(`unknown language "${value}"; use one of ${LANG_CODES.join(", ")}`, command);
}

/** The API's input spelling. */
export function apiLang(code: LangCode): Uppercase<LangCode> {
  return code.toUpperCase() as Uppercase<LangCode>;
}
