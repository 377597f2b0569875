import { describe, expect, it } from "vitest";
import { createApp } from "../../worker/app.js";
import { OPERATIONS } from "../../worker/openapi/operations.js";
import { call } from "./helpers.js";

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

  it("documents exactly the routes the app serves", () => {
    const documented = [...new Set(OPERATIONS.map((o) => `${o.method} ${o.path}`))].sort();
    expect(documented).toEqual(registeredRoutes());
  });

  it("describes request bodies with the same schemas that validate them", async () => {
    const doc = (await (await call("/v1/openapi.json")).json()) as any;
    const caps = doc.paths["/v1/function/{id}/capabilities"].post.requestBody.content["application/json"].schema;
    expect(caps.properties.timeout).toMatchObject({ minimum: 10, maximum: 120 });
    expect(caps.additionalProperties).toBe(false);
    const release = doc.paths["/v1/function/{id}/release"].put.requestBody.content["application/json"].schema;
    expect(release.properties.canary.anyOf[0].properties.weight).toMatchObject({ minimum: 1, maximum: 99 });
    expect(doc.paths["/v1/function/{id}/release"].get.responses["200"].content["application/json"].schema.required).toEqual(["buildId", "pinned", "canary"]);
    expect(Object.keys(doc.paths["/v1/function/{id}/rollback"].post.responses)).toEqual(["200", "401", "404", "409"]);
    expect(doc.paths["/v1/task/{id}"].get.responses["200"].content["application/json"].schema.properties.buildId).toBeDefined();
    const network = doc.paths["/v1/function/{id}/network"].put.requestBody.content["application/json"].schema;
    expect(network).toMatchObject({ additionalProperties: false, required: ["egress"] });
    expect(network.properties.egress.enum).toEqual(["none", "internet"]);
    expect(Object.keys(doc.paths["/v1/function/{id}/network"].put.responses)).toContain("403");
  });
});
