import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Runner } from "../../agent/runner/index.js";
import type { Lang } from "../../agent/runtimes/languages.js";
import { ensureEnvironment } from "./helpers/environment.js";
import { buildFiles, call, removeTempDirs, tempDir } from "./helpers/functions.js";
import type { ZipItem } from "../support/zip.js";

// The dynamic languages share one rule for what a handler returns (docs/runtimes.md).
const cases: { lang: Lang; file: string; source: (expr: string) => string; values: Record<string, string>; brokenLoad: string }[] = [
  {
    lang: "py",
    file: "handler.py",
    source: (expr) => `def handle(event, context):\n    return ${expr}\n`,
    values: { object: '{"statusCode": 1, "extra": True}', text: '"plain text"', nothing: "None", bytes: 'b"\\x00\\x01"' },
    brokenLoad: "import module_that_does_not_exist\n\ndef handle(event, context):\n    return 1\n",
  },
  {
    lang: "js",
    file: "handler.js",
    source: (expr) => `module.exports = async () => ${expr};\n`,
    values: { object: "({ statusCode: 1, extra: true })", text: '"plain text"', nothing: "undefined", bytes: "Buffer.from([0, 1])" },
    brokenLoad: "require('module_that_does_not_exist');\nmodule.exports = async () => 1;\n",
  },
  {
    lang: "rb",
    file: "handler.rb",
    source: (expr) => `def handle(event, context)\n  ${expr}\nend\n`,
    values: { object: '{ "statusCode" => 1, "extra" => true }', text: '"plain text"', nothing: "nil", bytes: '"\\x00\\x01".b' },
    brokenLoad: "require 'module_that_does_not_exist'\n\ndef handle(event, context)\n  1\nend\n",
  },
];

let runner: Runner;

beforeAll(async () => {
  await ensureEnvironment(cases.map((c) => c.lang));
  runner = await Runner.create({ stateDir: path.join(await tempDir("state-plain"), "state"), agentId: "test-plain" });
});

afterAll(async () => {
  await runner?.shutdown();
  await removeTempDirs();
});

async function answer(lang: Lang, files: ZipItem[]) {
  const built = await buildFiles(lang, files);
  expect(built.result.ok, built.log.join("\n")).toBe(true);
  return runner.invoke(call(built, lang, {}));
}

for (const c of cases) {
  describe(`${c.lang}: plain return values`, () => {
    it("sends an object that is not exactly a response as JSON with 200", async () => {
      const res = await answer(c.lang, [{ name: c.file, data: c.source(c.values.object ?? "") }]);
      expect(res.status).toBe(200);
      expect(res.headers["content-type"]).toBe("application/json");
      expect(JSON.parse(res.body.toString())).toEqual({ statusCode: 1, extra: true });
    });

    it("sends a string as text and nothing as an empty 200", async () => {
      const text = await answer(c.lang, [{ name: c.file, data: c.source(c.values.text ?? "") }]);
      expect([text.status, text.headers["content-type"], text.body.toString()]).toEqual([200, "text/plain; charset=utf-8", "plain text"]);
      const nothing = await answer(c.lang, [{ name: c.file, data: c.source(c.values.nothing ?? "") }]);
      expect([nothing.status, nothing.body.length]).toEqual([200, 0]);
    });

    it("sends bytes as they are", async () => {
      const res = await answer(c.lang, [{ name: c.file, data: c.source(c.values.bytes ?? "") }]);
      expect(res.headers["content-type"]).toBe("application/octet-stream");
      expect([...res.body]).toEqual([0, 1]);
    });

    it("answers 500 with the load error in the log when the handler cannot load", async () => {
      const res = await answer(c.lang, [{ name: c.file, data: c.brokenLoad }]);
      expect(res.status).toBe(500);
      expect(res.log.join("\n")).toContain("module_that_does_not_exist");
    });
  });
}
