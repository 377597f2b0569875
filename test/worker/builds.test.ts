import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import {
  call,
  callJson,
  expectError,
  ISO_UTC,
  newAccount,
  newFunction,
  RECORD_ID,
  sql,
  tinyZip,
  uploadBuild,
} from "./helpers.js";
import { PART_BYTES, storeZip } from "../../worker/http/zip-upload.js";
import { ApiError } from "../../worker/errors.js";

const OCTET = { "content-type": "application/octet-stream" };

async function withFunction() {
  const acct = await newAccount();
  return { ...acct, fn: await newFunction(acct.token) };
}

const upload = (token: string, fn: string, body: BodyInit | undefined, query = "?arch=amd64", headers: Record<string, string> = OCTET) =>
  call(`/v1/build/${fn}${query}`, { token, method: "POST", ...(body === undefined ? {} : { body }), headers });

describe("POST /v1/build/<function_id>?arch=amd64", () => {
  it("answers 201 with the build id and stores the zip in R2", async () => {
    const { token, fn, accountId } = await withFunction();
    const zip = tinyZip();
    const body = await callJson(`/v1/build/${fn}?arch=amd64`, 201, { token, body: zip, headers: OCTET });
    expect(body).toEqual({ id: expect.stringMatching(RECORD_ID) });
    const stored = await env.BUCKET.get(`acct/${accountId}/fn/${fn}/builds/${body.id}/source.zip`);
    expect(new Uint8Array(await stored!.arrayBuffer())).toEqual(zip);
  });

  it("accepts an empty archive and a chunked upload without Content-Length", async () => {
    const { token, fn } = await withFunction();
    const empty = new Uint8Array(22);
    new DataView(empty.buffer).setUint32(0, 0x06054b50, true);
    expect((await upload(token, fn, empty)).status).toBe(201);
    const zip = tinyZip();
    const chunked = new ReadableStream<Uint8Array>({
      start(ctrl) {
        ctrl.enqueue(zip.subarray(0, 10));
        ctrl.enqueue(zip.subarray(10));
        ctrl.close();
      },
    });
    expect((await upload(token, fn, chunked)).status).toBe(201);
  });

  it("streams a chunked upload of several parts into R2 byte for byte", async () => {
    const { token, fn, accountId } = await withFunction();
    const zip = zipLooking(2 * PART_BYTES + 12345);
    const stream = new ReadableStream<Uint8Array>({
      start(ctrl) {
        // Chunks that straddle the part boundaries.
        for (let at = 0; at < zip.length; at += 3_000_001) ctrl.enqueue(zip.slice(at, at + 3_000_001));
        ctrl.close();
      },
    });
    const res = await upload(token, fn, stream);
    const { id } = (await res.json()) as { id: string };
    expect(res.status).toBe(201);
    const stored = await env.BUCKET.get(`acct/${accountId}/fn/${fn}/builds/${id}/source.zip`);
    const bytes = new Uint8Array(await stored!.arrayBuffer());
    expect(bytes.length).toBe(zip.length);
    expect(await digest(bytes)).toBe(await digest(zip)); // not toEqual: its diff of 10 MiB would not fit in memory
  });

  it("answers 500 internal_error, naming nothing of ours, when storage fails", async () => {
    const stream = new Response(tinyZip()).body!;
    // R2 refuses keys over 1024 bytes: a storage failure that is not the caller's doing.
    const failing = storeZip(env.BUCKET, "k".repeat(2048), new Request("https://api.test/", { method: "POST", body: stream, headers: { "content-length": String(tinyZip().length) } }), 1 << 20);
    const err = await failing.then(() => null, (e: unknown) => e as ApiError);
    expect(err).toBeInstanceOf(ApiError);
    expect([err!.status, err!.code]).toEqual([500, "internal_error"]);
    expect(err!.message).not.toMatch(/key|R2|bucket|1024/i);
  });

  it("requires Content-Type: application/octet-stream (415)", async () => {
    const { token, fn } = await withFunction();
    await expectError(upload(token, fn, tinyZip(), "?arch=amd64", {}), 415, "unsupported_media_type");
    await expectError(upload(token, fn, tinyZip(), "?arch=amd64", { "content-type": "application/zip" }), 415, "unsupported_media_type");
    await expectError(upload(token, fn, tinyZip(), "?arch=amd64", { "content-type": "application/json" }), 415, "unsupported_media_type");
  });

  it("requires arch=amd64 (400)", async () => {
    const { token, fn } = await withFunction();
    for (const q of ["", "?arch=arm64", "?arch=AMD64", "?arch=amd64&arch=amd64", "?arch=amd64&os=linux"]) {
      const err = await expectError(upload(token, fn, tinyZip(), q), 400, "validation_failed");
      expect(err.details?.length, q).toBeGreaterThan(0);
    }
  });

  it("refuses a body that is not a complete zip archive (400)", async () => {
    const { token, fn } = await withFunction();
    const zip = tinyZip();
    const bodies: [string, BodyInit | undefined][] = [
      ["no body", undefined],
      ["empty", new Uint8Array(0)],
      ["text", "print('hello')"],
      ["gzip", new Uint8Array([0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])],
      ["truncated", zip.subarray(0, zip.length - 30)],
      ["only a signature", new Uint8Array([0x50, 0x4b, 0x03, 0x04])],
    ];
    for (const [what, body] of bodies) {
      const res = await upload(token, fn, body);
      expect(res.status, what).toBe(400);
      expect(((await res.json()) as any).error.code, what).toBe("validation_failed");
    }
    expect((await callJson(`/v1/build/list?functionId=${fn}`, 200, { token })).totalCount).toBe(0);
  });

  it("answers 413 for a zip over 50 MiB, from its declared length", async () => {
    const { token, fn } = await withFunction();
    const res = upload(token, fn, tinyZip(), "?arch=amd64", { ...OCTET, "content-length": String(50 * 1024 * 1024 + 1) });
    await expectError(res, 413, "payload_too_large");
  });

  it("answers 413 for a chunked upload that grows past 50 MiB", async () => {
    const { token, fn } = await withFunction();
    const mib = new Uint8Array(1024 * 1024);
    mib.set([0x50, 0x4b, 0x03, 0x04]);
    let sent = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(ctrl) {
        if (sent++ > 50) ctrl.close();
        else ctrl.enqueue(mib.slice());
      },
    });
    await expectError(upload(token, fn, stream), 413, "payload_too_large");
  });

  it("answers 404 for an unknown function", async () => {
    const { token } = await newAccount();
    await expectError(upload(token, "nosuchfunction", tinyZip()), 404, "not_found");
  });
});

describe("GET /v1/build/<build_id>", () => {
  it("answers {id, functionId, status, arch, timeline, log, logLines, createdAt, evictedAt}; a new build is PENDING", async () => {
    const { token, fn } = await withFunction();
    const { id } = await uploadBuild(token, fn);
    const build = await callJson(`/v1/build/${id}`, 200, { token });
    expect(build).toEqual({
      id,
      functionId: fn,
      status: "PENDING",
      arch: ["amd64"],
      timeline: [{ status: "PENDING", time: expect.stringMatching(ISO_UTC) }],
      log: [],
      logLines: 0,
      createdAt: expect.stringMatching(ISO_UTC),
      evictedAt: null,
    });
    expect(build.timeline[0].time).toBe(build.createdAt);
  });

  it("reports the log lines and timeline an agent recorded", async () => {
    const { token, fn } = await withFunction();
    const { id } = await uploadBuild(token, fn);
    const timeline = [
      { status: "PENDING", time: "2026-11-21T05:14:00.000Z" },
      { status: "BUILDING", time: "2026-11-21T05:14:01.000Z" },
      { status: "FAILED", time: "2026-11-21T05:14:09.000Z" },
    ];
    await sql("update builds set status = 'FAILED', timeline = ? where id = ?", JSON.stringify(timeline), id);
    await sql("insert into build_logs (build_id, seq, line) values (?, 1, 'step 1'), (?, 0, 'step 0'), (?, 2, 'error: no handler')", id, id, id);
    expect(await callJson(`/v1/build/${id}`, 200, { token })).toMatchObject({ status: "FAILED", timeline, log: ["step 0", "step 1", "error: no handler"] });
  });

  it("answers 404 for an unknown id", async () => {
    const { token } = await newAccount();
    await expectError(call("/v1/build/nosuchbuild", { token }), 404, "not_found");
  });
});

describe("GET /v1/build/list", () => {
  async function builds(n: number) {
    const ctx = await withFunction();
    const ids: string[] = [];
    for (let i = 0; i < n; i++) ids.push((await uploadBuild(ctx.token, ctx.fn)).id);
    return { ...ctx, newestFirst: ids.reverse() };
  }
  const idsOf = (env: { results: { id: string }[] }) => env.results.map((r) => r.id);

  it("defaults to one build a page, the newest, as {id, functionId, status, createdAt}", async () => {
    const { token, fn, newestFirst } = await builds(3);
    expect(await callJson("/v1/build/list", 200, { token })).toEqual({
      pageCount: 3,
      pageSize: 1,
      totalCount: 3,
      results: [{ id: newestFirst[0], functionId: fn, status: "PENDING", createdAt: expect.stringMatching(ISO_UTC) }],
    });
  });

  it("pages at the bounds of limit: 1 and 100; a page past the end is empty", async () => {
    const { token, newestFirst } = await builds(3);
    const p3 = await callJson("/v1/build/list?limit=1&page=3", 200, { token });
    expect({ ...p3, results: idsOf(p3) }).toEqual({ pageCount: 3, pageSize: 1, totalCount: 3, results: [newestFirst[2]] });
    const all = await callJson("/v1/build/list?limit=100", 200, { token });
    expect({ ...all, results: idsOf(all) }).toEqual({ pageCount: 1, pageSize: 100, totalCount: 3, results: newestFirst });
    expect(await callJson("/v1/build/list?limit=2&page=3", 200, { token })).toEqual({ pageCount: 2, pageSize: 2, totalCount: 3, results: [] });
    expect(await callJson(`/v1/build/list?limit=100&page=${Number.MAX_SAFE_INTEGER}`, 200, { token })).toEqual({ pageCount: 1, pageSize: 100, totalCount: 3, results: [] });
  });

  it("refuses limit 0 and 101, page 0 and unknown parameters", async () => {
    const { token } = await newAccount();
    for (const q of ["limit=0", "limit=101", "page=0", "limit=1.5", "page=", "status=SUCCESS"])
      await expectError(call(`/v1/build/list?${q}`, { token }), 400, "validation_failed");
  });

  it("filters by functionId; an unknown function answers 404", async () => {
    const { token, fn, newestFirst } = await builds(2);
    const other = await newFunction(token, { name: "other" });
    const otherBuild = (await uploadBuild(token, other)).id;
    expect(idsOf(await callJson(`/v1/build/list?functionId=${fn}&limit=10`, 200, { token }))).toEqual(newestFirst);
    expect(idsOf(await callJson(`/v1/build/list?functionId=${other}&limit=10`, 200, { token }))).toEqual([otherBuild]);
    await expectError(call("/v1/build/list?functionId=nosuchfunction", { token }), 404, "not_found");
  });
});

/** `size` bytes that pass the upload's checks: a zip signature first, an end record last. */
function zipLooking(size: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31) & 0xff;
  bytes.set([0x50, 0x4b, 0x03, 0x04]);
  bytes.fill(0, size - 22);
  bytes.set([0x50, 0x4b, 0x05, 0x06], size - 22);
  return bytes;
}

const digest = async (bytes: Uint8Array) => [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))].map((b) => b.toString(16).padStart(2, "0")).join("");
