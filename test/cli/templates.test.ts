import fs from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { LANGS } from "../../agent/runtimes/languages.js";
import type { LangCode } from "../../cli/langs.js";
import { TEMPLATES, templateLangs } from "../../cli/templates.js";
import { localStack, type AgentProcess, type LocalWorker } from "../e2e/harness.js";
import { asUser, show, stopSuite } from "./run-cli.js";

// Every template of `gcfaas init --template`, in every language it exists in: made with init, built
// by deploy on a real agent (offline, so vendored dependencies must install from the folder), and
// called with the answer it promises.
let worker: LocalWorker;
let agent: AgentProcess;
let token: string;
let tmp: string;
const { gc, ok } = asUser(() => worker.url, () => token, () => tmp);

interface Call {
  args: string[];
  check: (body: unknown) => void;
}
const hello: Call = { args: ["-q", "name=Ada"], check: (b) => expect(b).toMatchObject({ message: "Hello, Ada!" }) };
const counter: Call[] = [1, 2].map((n) => ({ args: [], check: (b) => expect(b).toEqual({ count: n }) }));

/** What each template answers, call by call (the counter's second call sees what the first stored). */
const CALLS: Record<string, Partial<Record<LangCode, Call[]>>> = {
  hello: Object.fromEntries(LANGS.map((l) => [l, [hello]])),
  "with-dependency": {
    py: [{ args: ["-q", "lang=py"], check: (b) => expect(b).toMatch(/^\| name\s+\| value\s+\|\n\|-+\|-+\|\n\| lang\s+\| py\s+\|$/) }],
    js: [{ args: ["-q", "duration=2d"], check: (b) => expect(b).toEqual({ input: "2d", milliseconds: 172_800_000 }) }],
    go: [{ args: [], check: (b) => expect(b).toMatchObject({ uuid: expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-/), version: 4 }) }],
    rb: [{ args: ["-q", "name=Ada"], check: (b) => expect(b).toBe("Hello, Ada! You sent 1 query parameters.") }],
    rs: [{ args: ["-q", "text=hello-world"], check: (b) => expect(b).toEqual({ snake: "hello_world", kebab: "hello-world", camel: "HelloWorld" }) }],
    cs: [{ args: ["--data", '{"a": 1, "b": 2}'], check: (b) => expect(b).toEqual({ keys: ["a", "b"], count: 2 }) }],
  },
  counter: { py: counter, js: counter, go: counter, rb: counter },
};

const cases = TEMPLATES.flatMap((t) => templateLangs(t).map((lang) => ({ template: t.name, lang })));

beforeAll(async () => {
  await ensureOfflineImages(LANGS);
  tmp = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-templates-"));
  ({ worker, agent, token } = await localStack({ account: "templates", nodeId: "agent-templates", agentArgs: ["--slots", "4"] }));
}, 1_800_000);

afterAll(() => stopSuite(agent, worker, tmp));

describe("templates", () => {
  it("lists each template with the languages it exists in and a line on what it does", async () => {
    const r = await ok(["templates"]);
    expect(r.stdout).toMatch(/^hello\s+py,js,go,rb,rs,cs\s+greets the caller/m);
    expect(r.stdout).toMatch(/^with-dependency\s+py,js,go,rb,rs,cs\s+uses a third-party package/m);
    expect(r.stdout).toMatch(/^counter\s+py,js,go,rb\s+counts its calls in the function's storage/m);
    expect((await ok(["templates", "--json"])).json()).toContainEqual({ name: "counter", langs: ["py", "js", "go", "rb"], summary: expect.any(String) });
  });
});

describe("init --template", () => {
  it("refuses a template it does not have, or a language the template does not exist in", async () => {
    const unknown = await gc(["init", "x", "--lang", "py", "--template", "nope"]);
    expect(unknown.code, show(unknown)).toBe(2);
    expect(unknown.stderr).toContain('unknown template "nope"; use one of hello, with-dependency, counter');
    const rust = await gc(["init", "x", "--lang", "rs", "--template", "counter"]);
    expect(rust.code, show(rust)).toBe(2);
    expect(rust.stderr).toContain("the counter template exists in py (Python), js (Node.js), go (Go), rb (Ruby), not in rs");
    await expect(fs.access(path.join(tmp, "x"))).rejects.toThrow();
  });

  it.each(cases)("$template in $lang: builds and answers as it says", async ({ template, lang }) => {
    const calls = CALLS[template]?.[lang];
    if (!calls) throw new Error(`no expected answer written for the ${template} template in ${lang}`);
    const dir = `${template.replace(/[^a-z]/g, "")}${lang}`;
    await ok(["init", dir, "--lang", lang, "--template", template]);
    await ok(["deploy", dir]);
    for (const call of calls) {
      const r = await ok(["invoke", dir, ...call.args, "--json"]);
      const answer = r.json<{ status: number; body: unknown }>();
      expect(answer.status, show(r)).toBe(200);
      call.check(answer.body);
    }
  });
});
