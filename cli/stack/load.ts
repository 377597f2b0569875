import fs from "node:fs/promises";
import path from "node:path";
import { isMap, isNode, isPair, isScalar, LineCounter, parseDocument, type Document } from "yaml";
import type { z } from "zod";
import { CliError, type ErrorDetail } from "../errors.js";
import { stackFile, type StackFile } from "./schema.js";

export const DEFAULT_STACK_FILE = "gcfaas.yml";

export interface LoadedStack {
  /** Absolute path of the file; folders in it are relative to its directory. */
  file: string;
  stack: StackFile;
}

/** Reads and validates a stack file; every problem is reported with its line and field. */
export async function loadStack(file: string): Promise<LoadedStack> {
  let text: string;
  try {
    text = await fs.readFile(file, "utf8");
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT")
      throw new CliError("no_stack_file", `${file} does not exist`, [], 2, "write one (see docs/cli.md, \"The stack file\"), or name another with -f FILE");
    throw err;
  }
  return { file, stack: parseStack(text, path.basename(file)) };
}

/** Parses the YAML text of a stack file named `name` (for messages). */
export function parseStack(text: string, name: string): StackFile {
  const lines = new LineCounter();
  // Merge keys (`<<: *defaults`) let functions share settings, as in docker-compose files.
  const doc = parseDocument(text, { lineCounter: lines, prettyErrors: false, uniqueKeys: true, merge: true });
  const at = (offset: number) => `${name}:${lines.linePos(offset).line}`;
  if (doc.errors.length > 0) {
    const details = doc.errors.map((e): ErrorDetail => ({ field: at(e.pos[0]), message: e.message.split("\n")[0]!.slice(0, 200) }));
    throw new CliError("invalid_stack_file", `${name} is not valid YAML`, details, 2);
  }
  const parsed = stackFile.safeParse(withoutExtensions(doc.toJS() ?? {}));
  if (parsed.success) return parsed.data;
  const details = parsed.error.issues.map((issue) => describeIssue(doc, issue, at));
  throw new CliError("invalid_stack_file", `${name} has ${details.length === 1 ? "a mistake" : `${details.length} mistakes`}; nothing was changed`, details, 2);
}

/** `gcfaas.yml:12 functions.hello.capabilities.timeout`, with the line of the value (or its nearest parent). */
function describeIssue(doc: Document, issue: z.core.$ZodIssue, at: (offset: number) => string): ErrorDetail {
  const p = issue.path.map((k) => (typeof k === "symbol" ? String(k) : k));
  if (issue.code === "unrecognized_keys") {
    const key = issue.keys[0]!;
    const offset = keyOffset(doc, p, key) ?? nearestOffset(doc, p);
    return { field: `${at(offset)} ${[...p, key].join(".")}`, message: `unknown field${issue.keys.length > 1 ? `s ${issue.keys.join(", ")}` : ""} (check its spelling)` };
  }
  if (issue.code === "invalid_key") {
    const offset = keyOffset(doc, p.slice(0, -1), String(p.at(-1))) ?? nearestOffset(doc, p);
    return { field: `${at(offset)} ${p.join(".")}`, message: `name ${issue.issues[0]?.message ?? "is not allowed"}` };
  }
  return { field: `${at(nearestOffset(doc, p))} ${p.join(".") || "(top level)"}`, message: issue.message };
}

/** The start of the node at `p`, else of its nearest ancestor that the file has. */
function nearestOffset(doc: Document, p: readonly (string | number)[]): number {
  for (let n = p.length; n >= 0; n--) {
    const node = n === 0 ? doc.contents : doc.getIn(p.slice(0, n), true);
    if (isNode(node) && node.range) return node.range[0];
  }
  return 0;
}

function keyOffset(doc: Document, p: readonly (string | number)[], key: string): number | undefined {
  const parent = p.length === 0 ? doc.contents : doc.getIn(p, true);
  if (!isMap(parent)) return undefined;
  const pair = parent.items.find((i) => isPair(i) && isScalar(i.key) && i.key.value === key);
  return pair && isScalar(pair.key) && pair.key.range ? pair.key.range[0] : undefined;
}

/** Top-level keys starting with `x-` hold anchors for merge keys (`x-defaults: &defaults`); they declare nothing. */
function withoutExtensions(raw: unknown): unknown {
  if (typeof raw !== "object" || raw === null || Array.isArray(raw)) return raw;
  return Object.fromEntries(Object.entries(raw).filter(([k]) => !k.startsWith("x-")));
}
