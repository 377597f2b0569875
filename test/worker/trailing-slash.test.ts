import { describe, expect, it } from "vitest";
import { callJson, expectError, call, newAccount, newFunction } from "./helpers.js";

describe("paths with one trailing slash", () => {
  it("match the same /v1 operations as without it, for reads and writes", async () => {
    const { token } = await newAccount();
    const { id } = await callJson<{ id: string }>("/v1/function/", 201, { token, json: { name: "slash", lang: "PY", type: "DOCKER" } });
    expect(await callJson(`/v1/function/${id}/`, 200, { token })).toMatchObject({ id, name: "slash" });
    expect(await callJson("/v1/function/list/", 200, { token })).toEqual([expect.objectContaining({ id })]);
    await callJson(`/v1/function/${id}/`, 204, { token, method: "PATCH", json: { description: "with a slash" } });
    expect((await callJson(`/v1/function/${id}`, 200, { token })).description).toBe("with a slash");
  });

  it("take no more than one slash, and keep 404 and 405 as without it", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    await expectError(call(`/v1/function/${fn}//`, { token }), 404, "not_found");
    await expectError(call("/v1/function/list/", { token, method: "PUT" }), 405, "method_not_allowed");
    await expectError(call("/v1/nowhere/", { token }), 404, "not_found");
  });
});
