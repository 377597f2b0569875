import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Runner } from "../../../agent/runner/index.js";
import type { Lang } from "../../../agent/runtimes/languages.js";
import { ensureEnvironment } from "./environment.js";
import { buildExample, buildFiles, call, removeTempDirs, tempDir, type Built } from "./functions.js";
import type { ZipItem } from "../../support/zip.js";

export interface LanguageSpec {
  lang: Lang;
  name: string;
  /** A function whose build must fail, and what the compiler says about it. */
  broken: { files: ZipItem[]; message: RegExp };
  /** The with-dependency example: a request and a check of its answer. */
  dependency: { query: Record<string, string>; check: (status: number, body: string) => void };
}

/**
 * The behaviour every language must show, run against real Docker: the hello example is built once
 * per language and shared by its tests (compiling is the slow part).
 */
export function defineLanguageSuite(spec: LanguageSpec): void {
  const { lang, name } = spec;
  let runner: Runner;
  let hello: Built;

  beforeAll(async () => {
    await ensureEnvironment([lang]);
    runner = await Runner.create({ stateDir: path.join(await tempDir(`state-${lang}`), "state"), agentId: `test-${lang}` });
    hello = await buildExample(lang, "hello");
  });

  afterAll(async () => {
    await runner?.shutdown();
    await removeTempDirs();
  });

  describe(`${name}: hello example`, () => {
    it("builds from a zip", () => {
      expect(hello.result.ok, hello.log.join("\n")).toBe(true);
      expect(hello.log.some((l) => l.includes("artifact ready"))).toBe(true);
    });

    it("hands the method, query parameters, headers and JSON body to the handler", async () => {
      const res = await runner.invoke(
        call(hello, lang, { method: "POST", query: { name: "Ada" }, headers: { "x-test": "yes" }, body: JSON.stringify({ n: 2, list: [1, "two"] }) }),
      );
      expect(res.status, res.log.join("\n")).toBe(200);
      expect(JSON.parse(res.body.toString())).toEqual({
        message: "Hello, Ada!",
        method: "POST",
        received: { n: 2, list: [1, "two"] },
        header: "yes",
      });
    });

    it("answers the handler's status, headers and body, and keeps its stdout as the log", async () => {
      const res = await runner.invoke(call(hello, lang, { query: { name: "Bob", status: "201" } }));
      expect(res.status).toBe(201);
      expect(res.headers["x-greeting"]).toBe("Bob");
      expect(res.headers["content-type"]).toMatch(/application\/json/);
      expect(JSON.parse(res.body.toString()).message).toBe("Hello, Bob!");
      expect(res.log.some((l) => l.includes("greeting Bob"))).toBe(true);
    });

    it("answers 500 with the error's message in the log when the handler fails", async () => {
      const res = await runner.invoke(call(hello, lang, { query: { fail: "1" } }));
      expect(res.status).toBe(500);
      expect(res.log.join("\n")).toContain("boom: failure requested by the caller");
      // The container survives a failing call and serves the next one.
      const next = await runner.invoke(call(hello, lang, { query: { name: "Cy" } }));
      expect(next.status).toBe(200);
      expect(next.container).toBe("warm");
      expect(next.log.join("\n")).not.toContain("boom");
    });
  });

  describe(`${name}: invalid status code`, () => {
    it("answers 500 and logs why when the handler sets a status outside 100-599", async () => {
      const res = await runner.invoke(call(hello, lang, { query: { status: "42" } }));
      expect(res.status).toBe(500);
      expect(res.log.join("\n")).toMatch(/between 100 and 599, got 42/);
      expect(res.log.join("\n")).toContain("greeting world");
    });
  });

  describe(`${name}: dependency example`, () => {
    it("installs the vendored dependency with no network and uses it", async () => {
      const built = await buildExample(lang, "with-dependency");
      expect(built.result.ok, built.log.join("\n")).toBe(true);
      const res = await runner.invoke(call(built, lang, { query: spec.dependency.query }));
      spec.dependency.check(res.status, res.body.toString());
    });
  });

  describe(`${name}: broken source`, () => {
    it("fails the build with the compiler's message in the build log", async () => {
      const built = await buildFiles(lang, spec.broken.files);
      expect(built.result.ok).toBe(false);
      expect(built.log.join("\n")).toMatch(spec.broken.message);
      expect(built.log.at(-1)).toMatch(/failed: build step exited with code [1-9]/);
    });
  });
}
