import path from "node:path";
import { describe, expect, it } from "vitest";
import { defineLanguageSuite } from "./helpers/language-suite.js";
import { buildFiles } from "./helpers/functions.js";
import { runnableBlocks } from "../support/doc-examples.js";

const ROOT = path.resolve(import.meta.dirname, "../..");

const broken = `package function

import handler "github.com/openfaas/templates-sdk/go-http"

func Handle(req handler.Request) (handler.Response, error) {
	return undefinedResponse, nil
}
`;

defineLanguageSuite({
  lang: "go",
  name: "Go",
  broken: { files: [{ name: "handler.go", data: broken }], message: /undefined: undefinedResponse/ },
  dependency: {
    query: {},
    check: (status, body) => {
      expect(status).toBe(200);
      const parsed = JSON.parse(body) as { uuid: string; version: number };
      expect(parsed.uuid).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
      expect(parsed.version).toBe(4);
    },
  },
});

describe("Go: a zip with no go.mod (the example of docs/runtimes.md)", () => {
  it("creates module handler/function quietly, never suggests go mod tidy, and builds", async () => {
    const block = runnableBlocks(ROOT, ["docs/runtimes.md"]).find((b) => b.lang === "go");
    if (!block) throw new Error("docs/runtimes.md has no go block");
    const built = await buildFiles("go", [{ name: "handler.go", data: block.code }]);
    const log = built.log.join("\n");
    expect(built.result.ok, log).toBe(true);
    expect(log).toContain("created one (module handler/function)");
    expect(log).not.toMatch(/go mod tidy|creating new go\.mod/);
  });
});
