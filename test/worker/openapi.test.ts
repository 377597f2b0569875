import { describe, expect, it } from "vitest";
import { createApp } from "../../worker/app.js";
import { Hono } from "hono";
import { describeRoute, documentedOperations } from "../../worker/openapi/describe.js";
import { openApiDocument } from "../../worker/openapi/document.js";
import { documentedFor, METHODS, operationsOf } from "../support/openapi-paths.js";
import { call, onRowlessTasks } from "./helpers.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

/** Routes the app registers: handlers, not middleware (whose paths end in a wildcard). */
function registeredRoutes(): string[] {
  const app = createApp();
  const seen = new Set<string>();
  // The console's pages (and the root's redirect to them) are for browsers, not API operations.
  const api = (path: string) => !path.includes("*") && path !== "/" && !path.startsWith("/console");
  for (const r of app.routes) if (api(r.path)) seen.add(`${r.method.toLowerCase()} ${r.path}`);
  return [...seen].sort();
}

describe("GET /v1/openapi.json", () => {
  it("serves an OpenAPI 3.1 document without a token", async () => {
    const res = await call("/v1/openapi.json");
    expect(res.status).toBe(200);
    const doc = (await res.json()) as any;
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.paths["/v1/function"].post.requestBody.content["application/json"].schema.properties.lang).toBeDefined();
    expect(doc.paths["/v1/function/{id}"].get.responses["200"].content["application/json"].schema.properties.metrics).toBeDefined();
    expect(doc.paths["/v1/trigger/list"].get.parameters.map((p: { name: string }) => p.name)).toEqual(["page", "limit", "functionId"]);
    expect(doc.paths["/gc/{id}"].post.security).toEqual([]);
  });

  it("documents exactly the routes the app serves: each declares its describeRoute", () => {
    const documented = documentedOperations(createApp()).map((o) => `${o.method} ${o.path}`);
    expect(documented.filter((r, i) => documented.indexOf(r) !== i)).toEqual([]);
    expect(documented.sort()).toEqual(registeredRoutes());
  });

  it("finds a route's documentation through mounted sub-apps, and leaves out a route that has none", () => {
    const doc = { summary: "Read a thing", group: "things", auth: "account" as const, ok: { status: 200, description: "The thing." }, errors: [404] };
    const things = new Hono().get("/:id", describeRoute(doc), (c) => c.text("thing")).delete("/:id", (c) => c.body(null, 204));
    const app = new Hono().route("/v1", new Hono().route("/thing", things));
    expect(documentedOperations(app)).toEqual([{ ...doc, method: "get", path: "/v1/thing/:id" }]);
    expect(Object.keys(openApiDocument(app).paths["/v1/thing/{id}"] ?? {})).toEqual(["get"]);
  });

  // Read from the served document, not the table it is made from: holds however it is made.
  it("serves a document that lists every method of every route the app registers", async () => {
    const doc = (await (await call("/v1/openapi.json")).json()) as any;
    const undocumented = registeredRoutes().flatMap((route) => {
      const [method, path] = route.split(" ") as [string, string];
      const methods = method === "all" ? METHODS.filter((m) => m !== "options") : [method];
      return methods.filter((m) => documentedFor(doc, path, m).length === 0).map((m) => `${m} ${path}`);
    });
    expect(undocumented).toEqual([]);
    const paths = new Set(registeredRoutes().map((r) => r.split(" ")[1]!.replace(/:\w+/g, "{}")));
    expect(Object.keys(doc.paths).filter((p) => !paths.has(p.replace(/\{\w+\}/g, "{}")))).toEqual([]);
  });

  it("describes request bodies with the same schemas that validate them", async () => {
    const doc = (await (await call("/v1/openapi.json")).json()) as any;
    const caps = doc.paths["/v1/function/{id}/capabilities"].post.requestBody.content["application/json"].schema;
    expect(caps.properties.timeout).toMatchObject({ minimum: 10, maximum: 120 });
    expect(caps.additionalProperties).toBe(false);
    const release = doc.paths["/v1/function/{id}/release"].put.requestBody.content["application/json"].schema;
    expect(release.properties.canary.anyOf[0].properties.weight).toMatchObject({ minimum: 1, maximum: 99 });
    expect(doc.paths["/v1/function/{id}/release"].get.responses["200"].content["application/json"].schema.required).toEqual(["buildId", "pinned", "canary"]);
    expect(Object.keys(doc.paths["/v1/function/{id}/rollback"].post.responses)).toEqual(["200", "401", "404", "409", "413", "503"]);
    expect(doc.paths["/v1/task/{id}"].get.responses["200"].content["application/json"].schema.properties.buildId).toBeDefined();
    const network = doc.paths["/v1/function/{id}/network"].put.requestBody.content["application/json"].schema;
    expect(network).toMatchObject({ additionalProperties: false, required: ["egress"] });
    expect(network.properties.egress.enum).toEqual(["none", "internet"]);
    expect(Object.keys(doc.paths["/v1/function/{id}/network"].put.responses)).toContain("403");
  });

  it("describes a task's input as any body, and the synchronous answer Prefer: wait gets", async () => {
    const doc = (await (await call("/v1/openapi.json")).json()) as any;
    for (const op of [doc.paths["/v1/task/{id}"].post, doc.paths["/gc/{id}"].post, doc.paths["/gc/{id}"].put]) {
      expect(Object.keys(op.requestBody.content)).toEqual(["application/json", "*/*"]);
      expect(op.parameters).toContainEqual(expect.objectContaining({ name: "Prefer", in: "header", required: false }));
      expect(Object.keys(op.responses["200"].content)).toEqual(["*/*"]);
      expect(Object.keys(op.responses["200"].headers)).toEqual(expect.arrayContaining(["Preference-Applied", "X-Task-Id", "Location"]));
      expect(op.responses["201"].content["application/json"].schema.required).toEqual(["id"]);
    }
  });

  it("names each operation once, readably", async () => {
    const ops = operationsOf((await (await call("/v1/openapi.json")).json()) as any);
    const ids = ops.map((o) => o.op.operationId);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
    for (const id of ids) expect(id).toMatch(/^[a-z]+[A-Z][A-Za-z]*$/);
    const named = Object.fromEntries(ops.map((o) => [`${o.method} ${o.path}`, o.op.operationId]));
    expect(named).toMatchObject({ "post /v1/task/{id}": "createTask", "get /v1/task/{id}/result": "getTaskResult", "get /v1/function/list": "listFunctions", "post /v1/admin/nodes/{nodeId}/drain": "drainNode" });
  });

  it("has no two paths that differ only in the names of their parameters", async () => {
    const doc = (await (await call("/v1/openapi.json")).json()) as any;
    const shapes = Object.keys(doc.paths).map((p) => p.replace(/\{\w+\}/g, "{}"));
    expect(shapes.filter((s, i) => shapes.indexOf(s) !== i)).toEqual([]);
    // One name per position, also where the paths go on differently (/gc/{id} and /gc/{id}/result).
    const byPosition = new Map<string, Set<string>>();
    for (const p of Object.keys(doc.paths))
      for (const m of p.matchAll(/\{(\w+)\}/g)) {
        const position = p.slice(0, m.index).replace(/\{\w+\}/g, "{}");
        byPosition.set(position, (byPosition.get(position) ?? new Set()).add(m[1]!));
      }
    expect([...byPosition].filter(([, names]) => names.size > 1)).toEqual([]);
    expect(doc.paths["/v1/build/{id}"].post.parameters[0]).toMatchObject({ name: "id", in: "path", description: "The function's id." });
  });

  it("lists error responses with the error schema on every operation", async () => {
    const doc = (await (await call("/v1/openapi.json")).json()) as any;
    for (const { method, path, op } of operationsOf(doc)) {
      const errors = Object.entries(op.responses).filter(([status]) => Number(status) >= 400);
      expect(errors.length, `${method} ${path}`).toBeGreaterThan(0);
      for (const [status, r] of errors) expect(r.content?.["application/json"]?.schema, `${method} ${path} ${status}`).toEqual({ $ref: "#/components/schemas/Error" });
    }
    expect(doc.info.license.name).toBeTruthy();
  });
});
