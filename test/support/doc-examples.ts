import fs from "node:fs";
import path from "node:path";

/**
 * The code blocks of README.md and docs/*.md, with the `<!-- doctest: … -->` marker written on the
 * line(s) before each one. A marker is an HTML comment, so it never shows in rendered Markdown:
 *
 *   <!-- doctest: run env=URL,T -->        a shell block, run by bash with those variables set
 *   <!-- doctest: run env=URL,T fill=<tag_id>:TAG -->   …and each `<tag_id>` replaced by the test's TAG
 *   <!-- doctest: run … files=hello.zip,data.csv -->      …in a folder holding those files (the test's)
 *   <!-- doctest: run … cwd=repo -->       …in the repository's own folder (`npx gcfaas`, `npm install -g .`)
 *   <!-- doctest: handler -->              a handler example of docs/runtimes.md, built and called
 *   <!-- doctest: skip <reason> -->        not run, and why
 */
export interface DocBlock {
  /** "README.md:87" — the file, relative to the repository, and the line of the opening fence. */
  where: string;
  file: string;
  line: number;
  /** The fence's info string: "sh", "go", "python", … */
  lang: string;
  code: string;
  marker?: DocMarker;
}

export type DocMarker =
  | { kind: "run"; env: string[]; fill: Record<string, string>; files: string[]; inRepo: boolean }
  | { kind: "handler" }
  | { kind: "skip"; reason: string }
  | { kind: "invalid"; text: string };

/** The languages whose blocks are examples a reader runs; others (output, ini, json) are not. */
export const RUNNABLE_LANGS = new Set(["sh", "bash", "go", "python", "js", "ruby", "rust", "csharp"]);

const MARKER = /^<!--\s*doctest:\s*(.*?)\s*-->$/;

export function parseMarker(text: string): DocMarker {
  const [kind, ...rest] = text.split(/\s+/);
  if (kind === "handler" && rest.length === 0) return { kind: "handler" };
  if (kind === "skip" && rest.length > 0) return { kind: "skip", reason: rest.join(" ") };
  if (kind === "run" && rest.every((r) => /^(env|fill|files)=/.test(r) || r === "cwd=repo")) {
    const list = (key: string) => (rest.find((r) => r.startsWith(`${key}=`))?.slice(key.length + 1).split(",") ?? []).filter(Boolean);
    const pairs = list("fill").map((f) => f.split(":"));
    if (pairs.every((p) => p.length === 2 && p[0] && p[1])) return { kind: "run", env: list("env"), fill: Object.fromEntries(pairs), files: list("files"), inRepo: rest.includes("cwd=repo") };
  }
  return { kind: "invalid", text };
}

export function extractBlocks(root: string, file: string): DocBlock[] {
  const lines = fs.readFileSync(path.join(root, file), "utf8").split("\n");
  const at = (i: number) => lines[i] ?? "";
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^(\s*)```(\S*)\s*$/.exec(at(i));
    if (!open) continue;
    const indent = open[1] ?? "";
    const start = i;
    const body: string[] = [];
    for (i++; i < lines.length && at(i).trim() !== "```"; i++) body.push(at(i).startsWith(indent) ? at(i).slice(indent.length) : at(i));
    // The marker is the nearest non-blank line above the fence.
    let above = start - 1;
    while (above >= 0 && at(above).trim() === "") above--;
    const m = MARKER.exec(at(above).trim());
    const marker = m ? parseMarker(m[1] ?? "") : undefined;
    blocks.push({ where: `${file}:${start + 1}`, file, line: start + 1, lang: open[2] ?? "", code: `${body.join("\n")}\n`, marker });
  }
  return blocks;
}

/** README.md then docs/*.md, in name order. */
export function docFiles(root: string): string[] {
  const docs = fs.readdirSync(path.join(root, "docs")).filter((f) => f.endsWith(".md")).sort();
  return ["README.md", ...docs.map((f) => `docs/${f}`)];
}

export function runnableBlocks(root: string, files = docFiles(root)): DocBlock[] {
  return files.flatMap((f) => extractBlocks(root, f)).filter((b) => RUNNABLE_LANGS.has(b.lang));
}
