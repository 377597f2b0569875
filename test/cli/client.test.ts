import { execFile } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { promisify } from "node:util";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
// The package's own export, as a TypeScript user of the package imports it.
import { createClient, type Answer } from "gc-faas/client";
import { ADMIN_TOKEN, LocalWorker, ROOT } from "../e2e/harness.js";
import { extractBlocks } from "../support/doc-examples.js";

// The typed client (`gc-faas/client`) against a local Worker: the same calls README.md shows.
let worker: LocalWorker;
let token: string;

beforeAll(async () => {
  worker = await LocalWorker.create();
  const admin = createClient({ baseUrl: worker.url, token: ADMIN_TOKEN });
  const { data, error } = await admin.POST("/v1/admin/accounts", { body: { name: "typed-client" } });
  if (error) throw new Error(`account not created: ${JSON.stringify(error)}`);
  token = data.token;
}, 600_000);

afterAll(() => worker?.dispose());

describe("createClient", () => {
  it("sends the token and answers with the document's types", async () => {
    const api = createClient({ baseUrl: worker.url, token });
    const created = await api.POST("/v1/tag", { body: { name: "typed", color: "#00ff00" } });
    expect(created.response.status).toBe(201);
    const id = created.data!.id;
    const { data: tags } = await api.GET("/v1/tag/list");
    const tag: Answer<"/v1/tag/list", "get">[number] | undefined = tags?.find((t) => t.id === id);
    expect(tag).toMatchObject({ id, name: "typed", color: "#00ff00" });
  });

  it("fills path and query parameters, and gives an error answer as the one error body", async () => {
    const api = createClient({ baseUrl: worker.url, token });
    const missing = await api.GET("/v1/function/{id}", { params: { path: { id: "nosuchfunction0" } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.error.code).toBe("not_found");
    const listed = await api.GET("/v1/build/list", { params: { query: { limit: 5 } } });
    expect(listed.data).toMatchObject({ results: [], pageSize: 5, totalCount: 0 });
  });

  it("without a token is refused, as every account route is", async () => {
    const anonymous = createClient({ baseUrl: worker.url });
    const { error, response } = await anonymous.GET("/v1/tag/list");
    expect(response.status).toBe(401);
    expect(error?.error.code).toBe("unauthorized");
  });

  it("uses the fetch it is given, with the user agent it names", async () => {
    const seen: string[] = [];
    const api = createClient({
      baseUrl: worker.url,
      token,
      userAgent: "typed-client-test/1",
      fetch: (request) => {
        seen.push(`${request.method} ${new URL(request.url).pathname} ${request.headers.get("user-agent")} ${request.headers.get("authorization") === `Bearer ${token}`}`);
        return fetch(request);
      },
    });
    await api.GET("/v1/tag/list");
    expect(seen).toEqual(["GET /v1/tag/list typed-client-test/1 true"]);
  });
});

describe("README.md's client example", () => {
  const [block] = extractBlocks(ROOT, "README.md").filter((b) => b.lang === "ts" && b.code.includes('from "gc-faas/client"'));
  // Inside the repository (its .state/ folder, ignored by git), so that `gc-faas/client` resolves
  // to this package as it does for the README's reader.
  const file = path.join(ROOT, ".state", "readme-client-example.ts");

  beforeAll(() => {
    if (!block) throw new Error("README.md has no ts block importing gc-faas/client");
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, block.code);
  });

  it("type-checks against the generated client", () => {
    const config = ts.getParsedCommandLineOfConfigFile(path.join(ROOT, "tsconfig.node.json"), {}, { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => undefined });
    const program = ts.createProgram([file], { ...config!.options, noEmit: true });
    const problems = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
    expect(problems).toEqual([]);
  });

  it("runs against the service and prints the new tag", async () => {
    const { stdout } = await promisify(execFile)(process.execPath, ["--import", "tsx", file], { cwd: ROOT, env: { ...process.env, GCFAAS_URL: worker.url, GCFAAS_TOKEN: token } });
    expect(stdout).toMatch(/^tag [0-9a-z]+: 0 functions\n$/);
  });
});
