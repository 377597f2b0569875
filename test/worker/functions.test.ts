import { describe, expect, it } from "vitest";
import {
  call,
  callJson,
  expectError,
  expectNoContent,
  grantPrivileged,
  newAccount,
  newFunction,
  newTag,
  RECORD_ID,
  UNIX_SECONDS,
} from "./helpers.js";

const DEFAULT_CAPABILITIES = { timeout: 30, cpuCount: 1, memSize: 256, networkLatency: 0, privileged: false };
const NO_METRICS = { todaysTasks: 0, pendingTasks: 0, weekTasks: 0, completedTasks: 0 };

async function createExpecting(token: string, json: unknown, status: number, code: string) {
  return expectError(call("/v1/function", { token, json }), status, code);
}

describe("POST /v1/function", () => {
  it("answers 201 with the id of the new function", async () => {
    const { token } = await newAccount();
    const body = await callJson("/v1/function", 201, { token, json: { name: "hello", lang: "GO", type: "DOCKER" } });
    expect(body).toEqual({ id: expect.stringMatching(RECORD_ID) });
  });

  it("accepts every language code in uppercase and returns it in lowercase", async () => {
    const { token } = await newAccount();
    for (const lang of ["GO", "PY", "JS", "CS", "RB", "RS"]) {
      const id = await newFunction(token, { lang });
      const fn = await callJson(`/v1/function/${id}`, 200, { token });
      expect([fn.lang, fn.type]).toEqual([lang.toLowerCase(), "docker"]);
    }
  });

  it("refuses a lowercase language code with a message naming the uppercase one", async () => {
    const { token } = await newAccount();
    const err = await createExpecting(token, { name: "a", lang: "py", type: "DOCKER" }, 400, "validation_failed");
    expect(err.message).toContain("PY");
    expect(err.details).toEqual([{ field: "lang", message: expect.stringContaining("PY") }]);
  });

  it("refuses an unknown language and a type other than DOCKER", async () => {
    const { token } = await newAccount();
    await createExpecting(token, { name: "a", lang: "JAVA", type: "DOCKER" }, 400, "validation_failed");
    const err = await createExpecting(token, { name: "a", lang: "GO", type: "docker" }, 400, "validation_failed");
    expect(err.message).toContain("DOCKER");
    await createExpecting(token, { name: "a", lang: "GO", type: "WASM" }, 400, "validation_failed");
  });

  it("requires name, lang and type", async () => {
    const { token } = await newAccount();
    for (const missing of ["name", "lang", "type"]) {
      const json: Record<string, string> = { name: "a", lang: "GO", type: "DOCKER" };
      delete json[missing];
      const err = await createExpecting(token, json, 400, "validation_failed");
      expect(err.details?.map((d) => d.field)).toEqual([missing]);
    }
  });

  it("takes alphanumeric names of 1 to 64 characters", async () => {
    const { token } = await newAccount();
    await newFunction(token, { name: "A".repeat(64) });
    await newFunction(token, { name: "x" });
    for (const name of ["", "A".repeat(65), "hello world", "hello-world", "héllo", "a_b"])
      await createExpecting(token, { name, lang: "GO", type: "DOCKER" }, 400, "validation_failed");
  });

  it("takes a printable ASCII description of at most 80 characters", async () => {
    const { token } = await newAccount();
    await newFunction(token, { description: "~".repeat(80) });
    await newFunction(token, { description: "" });
    for (const description of ["d".repeat(81), "tab\there", "line\nbreak", "café", "\u007f"]) {
      const err = await createExpecting(token, { name: "a", lang: "GO", type: "DOCKER", description }, 400, "validation_failed");
      expect(err.details?.[0]?.field).toBe("description");
    }
  });

  it("attaches tags given as ids or as tag objects, in the order given", async () => {
    const { token } = await newAccount();
    const t1 = await newTag(token, { name: "one", color: "#112233" });
    const t2 = await newTag(token, { name: "two" });
    const id = await newFunction(token, { tag: [t2, { id: t1, name: "ignored", color: "#000000" }] });
    const fn = await callJson(`/v1/function/${id}`, 200, { token });
    expect(fn.tags).toEqual([
      { id: t2, name: "two", color: "#808080" },
      { id: t1, name: "one", color: "#112233" },
    ]);
  });

  it("refuses duplicate tag ids, unknown tag ids and tags of another account, naming the field", async () => {
    const { token } = await newAccount();
    const other = await newAccount();
    const mine = await newTag(token);
    const theirs = await newTag(other.token);
    await createExpecting(token, { name: "a", lang: "GO", type: "DOCKER", tag: [mine, mine] }, 400, "validation_failed");
    await createExpecting(token, { name: "a", lang: "GO", type: "DOCKER", tag: [mine, { id: mine }] }, 400, "validation_failed");
    for (const bad of ["nosuchtag", theirs]) {
      const err = await createExpecting(token, { name: "a", lang: "GO", type: "DOCKER", tag: [mine, bad] }, 400, "validation_failed");
      expect(err.details).toEqual([{ field: "tag[1]", message: expect.any(String) }]);
    }
    await createExpecting(token, { name: "a", lang: "GO", type: "DOCKER", tag: ["not-alnum"] }, 400, "validation_failed");
    await createExpecting(token, { name: "a", lang: "GO", type: "DOCKER", tag: "solo" }, 400, "validation_failed");
    // Nothing was created by the refused requests.
    expect(await callJson("/v1/function/list", 200, { token })).toEqual([]);
  });

  it("refuses unknown fields, naming them", async () => {
    const { token } = await newAccount();
    const err = await createExpecting(token, { name: "a", lang: "GO", type: "DOCKER", colour: "x" }, 400, "validation_failed");
    expect(err.details).toEqual([{ field: "colour", message: expect.any(String) }]);
    expect(err.message).toContain("colour");
  });

  it("requires Content-Type: application/json (415) and a JSON object body (400)", async () => {
    const { token } = await newAccount();
    const body = JSON.stringify({ name: "a", lang: "GO", type: "DOCKER" });
    await expectError(call("/v1/function", { token, method: "POST", body }), 415, "unsupported_media_type");
    await expectError(call("/v1/function", { token, body, headers: { "content-type": "text/plain" } }), 415, "unsupported_media_type");
    const res = await call("/v1/function", { token, body, headers: { "content-type": "application/json; charset=utf-8" } });
    expect(res.status).toBe(201);
    await expectError(call("/v1/function", { token, body: "{name:", headers: { "content-type": "application/json" } }), 400, "invalid_json");
    await expectError(call("/v1/function", { token, method: "POST", headers: { "content-type": "application/json" } }), 400, "invalid_json");
    await expectError(call("/v1/function", { token, json: [] }), 400, "validation_failed");
  });

  it("answers 413 for a JSON body over 10 MiB", async () => {
    const { token } = await newAccount();
    const body = JSON.stringify({ name: "a", lang: "GO", type: "DOCKER", description: "x".repeat(10 * 1024 * 1024) });
    await expectError(call("/v1/function", { token, body, headers: { "content-type": "application/json" } }), 413, "payload_too_large");
  });
});

describe("GET /v1/function/<function_id>", () => {
  it("answers the function with default capabilities, zero metrics and the paused flag", async () => {
    const { token } = await newAccount();
    const id = await newFunction(token, { name: "resize", description: "Resizes images", lang: "JS" });
    expect(await callJson(`/v1/function/${id}`, 200, { token })).toEqual({
      id,
      name: "resize",
      description: "Resizes images",
      type: "docker",
      lang: "js",
      tags: [],
      capabilities: DEFAULT_CAPABILITIES,
      metrics: NO_METRICS,
      paused: false,
      createdAt: expect.stringMatching(UNIX_SECONDS),
    });
  });

  it("reports createdAt as Unix seconds of the creation time", async () => {
    const { token } = await newAccount();
    const before = Math.floor(Date.now() / 1000);
    const fn = await callJson(`/v1/function/${await newFunction(token)}`, 200, { token });
    expect(Number(fn.createdAt)).toBeGreaterThanOrEqual(before - 1);
    expect(Number(fn.createdAt)).toBeLessThanOrEqual(Math.floor(Date.now() / 1000) + 1);
  });

  it("answers 404 for an unknown id", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/function/nosuchfunction", { token }), 404, "not_found");
  });
});

describe("PATCH /v1/function/<function_id>", () => {
  it("changes name, description and tags and answers 204 with an empty body", async () => {
    const { token } = await newAccount();
    const t1 = await newTag(token, { name: "a" });
    const t2 = await newTag(token, { name: "b" });
    const id = await newFunction(token, { tag: [t1] });
    await expectNoContent(call(`/v1/function/${id}`, { token, method: "PATCH", json: { name: "renamed", description: "new words", tag: [{ id: t2 }] } }));
    const fn = await callJson(`/v1/function/${id}`, 200, { token });
    expect({ name: fn.name, description: fn.description, tags: fn.tags }).toEqual({
      name: "renamed",
      description: "new words",
      tags: [{ id: t2, name: "b", color: "#808080" }],
    });
  });

  it("leaves omitted fields alone and clears tags with an empty array", async () => {
    const { token } = await newAccount();
    const t1 = await newTag(token);
    const id = await newFunction(token, { description: "keep", tag: [t1] });
    await expectNoContent(call(`/v1/function/${id}`, { token, method: "PATCH", json: {} }));
    expect((await callJson(`/v1/function/${id}`, 200, { token })).tags).toHaveLength(1);
    await expectNoContent(call(`/v1/function/${id}`, { token, method: "PATCH", json: { tag: [] } }));
    const fn = await callJson(`/v1/function/${id}`, 200, { token });
    expect([fn.name, fn.description, fn.tags]).toEqual(["hello", "keep", []]);
  });

  it("validates like create and refuses fields that are not editable", async () => {
    const { token } = await newAccount();
    const id = await newFunction(token);
    const patch = (json: unknown) => call(`/v1/function/${id}`, { token, method: "PATCH", json });
    await expectError(patch({ name: "no spaces" }), 400, "validation_failed");
    await expectError(patch({ description: "d".repeat(81) }), 400, "validation_failed");
    await expectError(patch({ tag: ["x", "x"] }), 400, "validation_failed");
    const unknownTag = await expectError(patch({ tag: ["nosuchtag"] }), 400, "validation_failed");
    expect(unknownTag.details?.[0]?.field).toBe("tag[0]");
    for (const field of ["lang", "type", "id", "paused", "capabilities"]) {
      const err = await expectError(patch({ [field]: "GO" }), 400, "validation_failed");
      expect(err.details?.[0]?.field).toBe(field);
    }
    await expectError(call(`/v1/function/${id}`, { token, method: "PATCH", body: "{}" }), 415, "unsupported_media_type");
    expect((await callJson(`/v1/function/${id}`, 200, { token })).name).toBe("hello");
  });

  it("answers 404 for an unknown id", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/function/nosuchfunction", { token, method: "PATCH", json: { name: "x" } }), 404, "not_found");
  });
});

describe("GET /v1/function/list", () => {
  it("answers the caller's functions, newest first, as {id, name, description, lang, tags, createdAt}", async () => {
    const { token } = await newAccount();
    expect(await callJson("/v1/function/list", 200, { token })).toEqual([]);
    const tag = await newTag(token, { name: "web", color: "#ABCDEF" });
    const first = await newFunction(token, { name: "first", lang: "RB" });
    const second = await newFunction(token, { name: "second", description: "two", lang: "RS", tag: [tag] });
    expect(await callJson("/v1/function/list", 200, { token })).toEqual([
      { id: second, name: "second", description: "two", lang: "rs", tags: [{ id: tag, name: "web", color: "#abcdef" }], createdAt: expect.stringMatching(UNIX_SECONDS) },
      { id: first, name: "first", description: "", lang: "rb", tags: [], createdAt: expect.stringMatching(UNIX_SECONDS) },
    ]);
  });
});

describe("GET /v1/function/list?tag=<tag_id>", () => {
  it("restricts the list to functions carrying the tag", async () => {
    const { token } = await newAccount();
    const web = await newTag(token, { name: "web" });
    const cron = await newTag(token, { name: "cron" });
    const a = await newFunction(token, { name: "a", tag: [web] });
    const b = await newFunction(token, { name: "b", tag: [cron, web] });
    await newFunction(token, { name: "c", tag: [cron] });
    await newFunction(token, { name: "d" });
    const listed = await callJson<{ id: string; tags: unknown[] }[]>(`/v1/function/list?tag=${web}`, 200, { token });
    expect(listed.map((f) => f.id)).toEqual([b, a]);
    expect(listed[0]!.tags).toHaveLength(2);
  });

  it("answers [] for a tag with no functions, 404 for an unknown tag and 400 for a malformed one", async () => {
    const { token } = await newAccount();
    const idle = await newTag(token);
    expect(await callJson(`/v1/function/list?tag=${idle}`, 200, { token })).toEqual([]);
    await expectError(call("/v1/function/list?tag=nosuchtag", { token }), 404, "not_found");
    await expectError(call("/v1/function/list?tag=a-b", { token }), 400, "validation_failed");
    await expectError(call(`/v1/function/list?tag=${idle}&tag=${idle}`, { token }), 400, "validation_failed");
    await expectError(call("/v1/function/list?color=red", { token }), 400, "validation_failed");
  });
});

describe("POST /v1/function/<function_id>/togglePause", () => {
  it("flips the paused flag each time and answers 204", async () => {
    const { token } = await newAccount();
    const id = await newFunction(token);
    const paused = async () => (await callJson(`/v1/function/${id}`, 200, { token })).paused;
    expect(await paused()).toBe(false);
    await expectNoContent(call(`/v1/function/${id}/togglePause`, { token, method: "POST" }));
    expect(await paused()).toBe(true);
    await expectNoContent(call(`/v1/function/${id}/togglePause`, { token, method: "POST" }));
    expect(await paused()).toBe(false);
  });

  it("answers 404 for an unknown id", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/function/nosuchfunction/togglePause", { token, method: "POST" }), 404, "not_found");
  });
});

describe("DELETE /v1/function/<function_id>", () => {
  it("answers 204, after which the function is gone", async () => {
    const { token } = await newAccount();
    const id = await newFunction(token);
    const keep = await newFunction(token, { name: "keep" });
    await expectNoContent(call(`/v1/function/${id}`, { token, method: "DELETE" }));
    await expectError(call(`/v1/function/${id}`, { token }), 404, "not_found");
    await expectError(call(`/v1/function/${id}`, { token, method: "DELETE" }), 404, "not_found");
    expect((await callJson<{ id: string }[]>("/v1/function/list", 200, { token })).map((f) => f.id)).toEqual([keep]);
  });
});

describe("GET /v1/function/<function_id>/capabilities", () => {
  it("answers the defaults of a new function", async () => {
    const { token } = await newAccount();
    const id = await newFunction(token);
    expect(await callJson(`/v1/function/${id}/capabilities`, 200, { token })).toEqual(DEFAULT_CAPABILITIES);
  });

  it("answers 404 for an unknown id", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/function/nosuchfunction/capabilities", { token }), 404, "not_found");
  });
});

describe("POST /v1/function/<function_id>/capabilities", () => {
  const setup = async () => {
    const { token, accountId } = await newAccount();
    await grantPrivileged(accountId); // privileged: true is the operator's to allow (privileged.test.ts)
    const id = await newFunction(token);
    const set = (json: unknown) => call(`/v1/function/${id}/capabilities`, { token, json });
    const get = () => callJson(`/v1/function/${id}/capabilities`, 200, { token });
    return { token, id, set, get };
  };

  it("sets the given capabilities, answers 204 and leaves the others alone", async () => {
    const { token, id, set, get } = await setup();
    await expectNoContent(set({ timeout: 120, cpuCount: 0.5, privileged: true }));
    expect(await get()).toEqual({ timeout: 120, cpuCount: 0.5, memSize: 256, networkLatency: 0, privileged: true });
    await expectNoContent(set({ memSize: 2048 }));
    expect(await get()).toEqual({ timeout: 120, cpuCount: 0.5, memSize: 2048, networkLatency: 0, privileged: true });
    expect((await callJson(`/v1/function/${id}`, 200, { token })).capabilities).toEqual(await get());
  });

  it("accepts the bounds: timeout 10 and 120, cpuCount 0 and 4, memSize 0 and 2048", async () => {
    const { set, get } = await setup();
    await expectNoContent(set({ timeout: 10, cpuCount: 0, memSize: 0 }));
    expect(await get()).toMatchObject({ timeout: 10, cpuCount: 0, memSize: 0 });
    await expectNoContent(set({ timeout: 120, cpuCount: 4, memSize: 2048 }));
    expect(await get()).toMatchObject({ timeout: 120, cpuCount: 4, memSize: 2048 });
  });

  it("refuses values out of range or of the wrong type, naming the field", async () => {
    const { set, get } = await setup();
    const cases: [string, unknown][] = [
      ["timeout", 9],
      ["timeout", 121],
      ["timeout", 30.5],
      ["timeout", "30"],
      ["cpuCount", -0.1],
      ["cpuCount", 4.01],
      ["cpuCount", "1"],
      ["memSize", -1],
      ["memSize", 2049],
      ["memSize", 128.5],
      ["privileged", "true"],
      ["privileged", 1],
      ["privilaged", "yes"],
    ];
    for (const [field, value] of cases) {
      const err = await expectError(set({ [field]: value }), 400, "validation_failed");
      expect(err.details?.map((d) => d.field), `${field}=${JSON.stringify(value)}`).toEqual([field]);
    }
    expect(await get()).toEqual(DEFAULT_CAPABILITIES);
  });

  it("accepts privilaged as an alias of privileged", async () => {
    const { set, get } = await setup();
    await expectNoContent(set({ privilaged: true }));
    expect((await get()).privileged).toBe(true);
    await expectNoContent(set({ privileged: false, privilaged: false }));
    expect((await get()).privileged).toBe(false);
  });

  it("refuses privileged and privilaged when they disagree", async () => {
    const { set, get } = await setup();
    const err = await expectError(set({ privileged: true, privilaged: false }), 400, "validation_failed");
    expect(err.message).toContain("privilaged");
    expect((await get()).privileged).toBe(false);
  });

  it("refuses networkLatency, which is read-only", async () => {
    const { set } = await setup();
    const err = await expectError(set({ networkLatency: 0 }), 400, "validation_failed");
    expect(err.details).toEqual([{ field: "networkLatency", message: expect.stringContaining("read-only") }]);
  });

  it("refuses unknown fields and a body without Content-Type: application/json", async () => {
    const { token, id, set } = await setup();
    const err = await expectError(set({ timeout: 30, gpu: 1 }), 400, "validation_failed");
    expect(err.details?.[0]?.field).toBe("gpu");
    await expectError(call(`/v1/function/${id}/capabilities`, { token, method: "POST", body: '{"timeout":30}' }), 415, "unsupported_media_type");
  });

  it("answers 404 for an unknown id", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/function/nosuchfunction/capabilities", { token, json: { timeout: 30 } }), 404, "not_found");
  });
});
