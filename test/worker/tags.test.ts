import { describe, expect, it } from "vitest";
import { call, callJson, expectError, expectNoContent, newAccount, newEndpoint, newFunction, newTag, newTrigger, RECORD_ID, sql } from "./helpers.js";

const tagList = (token: string) => callJson<{ id: string; name: string; color: string }[]>("/v1/tag/list", 200, { token });

describe("POST /v1/tag", () => {
  it("answers 201 with the id; the color defaults to #808080", async () => {
    const { token } = await newAccount();
    const body = await callJson("/v1/tag", 201, { token, json: { name: "production" } });
    expect(body).toEqual({ id: expect.stringMatching(RECORD_ID) });
    expect(await tagList(token)).toEqual([{ id: body.id, name: "production", color: "#808080" }]);
  });

  it("stores colors lowercase", async () => {
    const { token } = await newAccount();
    const id = await newTag(token, { name: "Loud", color: "#FFAA0B" });
    expect(await tagList(token)).toEqual([{ id, name: "Loud", color: "#ffaa0b" }]);
  });

  it("takes any printable ASCII name of 1 to 64 characters; names need not be unique", async () => {
    const { token } = await newAccount();
    await newTag(token, { name: "with spaces & symbols!~" });
    await newTag(token, { name: "n".repeat(64) });
    await newTag(token, { name: "n".repeat(64) });
    expect(await tagList(token)).toHaveLength(3);
  });

  it("refuses bad names and colors, naming the field", async () => {
    const { token } = await newAccount();
    const cases: [Record<string, unknown>, string][] = [
      [{}, "name"],
      [{ name: "" }, "name"],
      [{ name: "n".repeat(65) }, "name"],
      [{ name: "naïve" }, "name"],
      [{ name: "tab\t" }, "name"],
      [{ name: 5 }, "name"],
      [{ name: "x", color: "#abc" }, "color"],
      [{ name: "x", color: "red" }, "color"],
      [{ name: "x", color: "#gggggg" }, "color"],
      [{ name: "x", color: "808080" }, "color"],
      [{ name: "x", color: "#8080800" }, "color"],
      [{ name: "x", color: null }, "color"],
      [{ name: "x", icon: "star" }, "icon"],
    ];
    for (const [json, field] of cases) {
      const err = await expectError(call("/v1/tag", { token, json }), 400, "validation_failed");
      expect(err.details?.map((d) => d.field), JSON.stringify(json)).toEqual([field]);
    }
    expect(await tagList(token)).toEqual([]);
  });

  it("requires Content-Type: application/json", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/tag", { token, method: "POST", body: '{"name":"x"}' }), 415, "unsupported_media_type");
    await expectError(call("/v1/tag", { token, body: '{"name":"x"}', headers: { "content-type": "text/json" } }), 415, "unsupported_media_type");
  });
});

describe("GET /v1/tag/list", () => {
  it("answers the caller's tags as {id, name, color}, newest first", async () => {
    const { token } = await newAccount();
    expect(await tagList(token)).toEqual([]);
    const a = await newTag(token, { name: "a", color: "#000000" });
    const b = await newTag(token, { name: "b" });
    expect(await tagList(token)).toEqual([
      { id: b, name: "b", color: "#808080" },
      { id: a, name: "a", color: "#000000" },
    ]);
  });
});

describe("PATCH /v1/tag/<tag_id>", () => {
  it("changes name and color, answers 204 and leaves omitted fields alone", async () => {
    const { token } = await newAccount();
    const id = await newTag(token, { name: "old", color: "#010101" });
    await expectNoContent(call(`/v1/tag/${id}`, { token, method: "PATCH", json: { name: "new" } }));
    expect(await tagList(token)).toEqual([{ id, name: "new", color: "#010101" }]);
    await expectNoContent(call(`/v1/tag/${id}`, { token, method: "PATCH", json: { color: "#ABCDEF" } }));
    expect(await tagList(token)).toEqual([{ id, name: "new", color: "#abcdef" }]);
    await expectNoContent(call(`/v1/tag/${id}`, { token, method: "PATCH", json: {} }));
    expect(await tagList(token)).toEqual([{ id, name: "new", color: "#abcdef" }]);
  });

  it("validates like create", async () => {
    const { token } = await newAccount();
    const id = await newTag(token);
    const patch = (json: unknown) => call(`/v1/tag/${id}`, { token, method: "PATCH", json });
    await expectError(patch({ name: "" }), 400, "validation_failed");
    await expectError(patch({ color: "#12345" }), 400, "validation_failed");
    await expectError(patch({ id: "x" }), 400, "validation_failed");
    await expectError(call(`/v1/tag/${id}`, { token, method: "PATCH", body: "{}" }), 415, "unsupported_media_type");
  });

  it("answers 404 for an unknown id", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/tag/nosuchtag", { token, method: "PATCH", json: { name: "x" } }), 404, "not_found");
    await expectError(call("/v1/tag/nosuchtag", { token, method: "PATCH", json: {} }), 404, "not_found");
  });
});

describe("DELETE /v1/tag/<tag_id>", () => {
  it("answers 204; the tag is gone and a second delete answers 404", async () => {
    const { token } = await newAccount();
    const id = await newTag(token);
    const keep = await newTag(token, { name: "keep" });
    await expectNoContent(call(`/v1/tag/${id}`, { token, method: "DELETE" }));
    expect((await tagList(token)).map((t) => t.id)).toEqual([keep]);
    await expectError(call(`/v1/tag/${id}`, { token, method: "DELETE" }), 404, "not_found");
  });
});

describe("tag arrays on functions, triggers and endpoints", () => {
  it("attach up to 64 tags, in the order given; 65 are refused", async () => {
    const { token, accountId } = await newAccount();
    const ids = Array.from({ length: 65 }, (_, i) => `tag${accountId}${String(i).padStart(2, "0")}`);
    for (const id of ids) await sql("insert into tags (id, account_id, name, color, created_at) values (?, ?, ?, '#808080', 0)", id, accountId, `n${id.slice(-2)}`);
    const many = ids.slice(0, 64).reverse();
    const fn = await newFunction(token, { tag: many });
    const trigger = await newTrigger(token, { functionId: fn, nextId: fn, tag: many });
    const ep = await newEndpoint(token, fn, { tag: many });
    for (const path of [`/v1/function/${fn}`, `/v1/trigger/${trigger}`, `/v1/endpoint/${ep}`])
      expect((await callJson(path, 200, { token })).tags.map((t: { id: string }) => t.id), path).toEqual(many);
    await expectNoContent(call(`/v1/function/${fn}`, { token, method: "PATCH", json: { tag: ids.slice(1, 65) } }));
    expect((await callJson(`/v1/function/${fn}`, 200, { token })).tags).toHaveLength(64);
    const err = await expectError(call(`/v1/function/${fn}`, { token, method: "PATCH", json: { tag: ids } }), 400, "validation_failed");
    expect(err.details?.[0]?.field).toBe("tag");
  });
});
