import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, callJson, clearQueue, expectError, newAccount, newFunction, sql, tinyZip, uploadBuild, flushedDb } from "./helpers.js";
import { eventually, FakeAgent } from "./fake-agent.js";
import { BUILD_LOG_PART_BYTES, BUILD_LOG_TEXT_BYTES, BUILD_LOG_TRAILER_BYTES, cutMarker, textCutNote } from "../../shared/build-log.js";

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const lineOf = (i: number) => `line ${i}`;
const range = (from: number, to: number, line = lineOf) => Array.from({ length: to - from }, (_, k) => line(from + k));
const putText = (path: string, token: string, body: string | Uint8Array) =>
  call(path, { token, method: "PUT", body, headers: { "content-length": String(typeof body === "string" ? new TextEncoder().encode(body).length : body.length) } });

/** A build of a new account's function, assigned to a fresh fake agent and BUILDING. */
async function buildingBuild(node: string) {
  const agent = await FakeAgent.connect(node, { slots: 1 });
  const { token, accountId } = await newAccount();
  const fn = await newFunction(token);
  const { id } = await uploadBuild(token, fn, tinyZip());
  const assign = await agent.next("build.assign");
  expect(assign.buildId).toBe(id);
  agent.send({ type: "build.started", buildId: id });
  await eventually(async () => (await callJson(`/v1/build/${id}`, 200, { token })).status === "BUILDING");
  return { agent, token, accountId, fn, id, assign };
}

/** Sends `total` lines as an agent that bounds nothing would: every line, batches of `batch`. */
function sendEveryLine(agent: FakeAgent, buildId: string, total: number, batch: number, line = lineOf) {
  for (let first = 0; first < total; first += batch) agent.send({ type: "build.log", buildId, first, lines: range(first, Math.min(total, first + batch), line) });
}

const logRows = async (buildId: string) => {
  const ends = await (await flushedDb()).prepare("select count(*) as n, coalesce(sum(length(head) + length(tail)), 0) as bytes from build_log_ends where build_id = ?").bind(buildId).first<{ n: number; bytes: number }>();
  const legacy = await (await flushedDb()).prepare("select count(*) as n from build_logs where build_id = ?").bind(buildId).first<{ n: number }>();
  return { rows: ends!.n + legacy!.n, bytes: ends!.bytes };
};

async function finished(agent: FakeAgent, token: string, id: string, ok = true) {
  agent.send(ok ? { type: "build.done", buildId: id, ok: true, artifactSize: 0 } : { type: "build.done", buildId: id, ok: false, reason: "exit status 1" });
  return eventually(async () => {
    const b = await callJson(`/v1/build/${id}`, 200, { token });
    return b.status === (ok ? "SUCCESS" : "FAILED") && b;
  }, 10_000);
}

describe("GET /v1/build/<build_id> of a build that printed 20,000 lines", () => {
  it("shows exactly the first 500 lines, one marker line and the last 500, from one bounded row of D1", async () => {
    const { agent, token, id } = await buildingBuild("log-flood-1");
    sendEveryLine(agent, id, 20_000, 1000);
    const build = await eventually(async () => {
      const b = await callJson(`/v1/build/${id}`, 200, { token });
      return b.logLines === 20_000 && b;
    }, 20_000);
    expect(build.log).toEqual([...range(0, 500), "… 19000 lines cut …", ...range(19_500, 20_000)]);
    const stored = await logRows(id);
    expect(stored.rows).toBe(1);
    expect(stored.bytes).toBeLessThan(16 * 1024); // the 20,000 lines themselves are 230 KB
  });

  it("keeps a failed build's reason as its last line", async () => {
    const { agent, token, id } = await buildingBuild("log-flood-2");
    sendEveryLine(agent, id, 2000, 1000);
    await eventually(async () => (await callJson(`/v1/build/${id}`, 200, { token })).logLines === 2000, 10_000);
    const build = await finished(agent, token, id, false);
    expect(build.log.at(-1)).toBe("build failed: exit status 1");
    expect(build.log).toEqual([...range(0, 500), cutMarker(1001), ...range(1501, 2000), "build failed: exit status 1"]);
    expect(build.logLines).toBe(2001);
  });

  it("bounds the row in bytes too: lines of 8 KiB leave fewer lines, the marker counting the rest", async () => {
    const { agent, token, id } = await buildingBuild("log-flood-3");
    const long = (i: number) => `${i} `.padEnd(8192, "x");
    sendEveryLine(agent, id, 600, 25, long);
    const build = await eventually(async () => {
      const b = await callJson(`/v1/build/${id}`, 200, { token });
      return b.logLines === 600 && b;
    }, 10_000);
    const marker = build.log.findIndex((l: string) => l.startsWith("… "));
    const head = build.log.slice(0, marker);
    const tail = build.log.slice(marker + 1);
    expect(head).toEqual(range(0, head.length, long));
    expect(tail).toEqual(range(600 - tail.length, 600, long));
    expect(build.log[marker]).toBe(cutMarker(600 - head.length - tail.length));
    expect(head.length * 8195).toBeLessThanOrEqual(BUILD_LOG_PART_BYTES);
    expect((await logRows(id)).bytes).toBeLessThanOrEqual(2 * BUILD_LOG_PART_BYTES);
  });

  it("takes batches in any order and a batch sent twice once", async () => {
    const { agent, token, id } = await buildingBuild("log-order");
    agent.send({ type: "build.log", buildId: id, first: 2, lines: ["c", "d"] });
    agent.send({ type: "build.log", buildId: id, first: 0, lines: ["a", "b"] });
    agent.send({ type: "build.log", buildId: id, first: 0, lines: ["a", "b"] });
    const build = await eventually(async () => {
      const b = await callJson(`/v1/build/${id}`, 200, { token });
      return b.log.length === 4 && b;
    });
    expect([build.log, build.logLines]).toEqual([["a", "b", "c", "d"], 4]);
  });

  it("answers 404 to another account", async () => {
    const { token: owner, id } = await buildingBuild("log-other-1");
    const { token: other } = await newAccount("other");
    await expectError(call(`/v1/build/${id}`, { token: other }), 404, "not_found");
    expect((await call(`/v1/build/${id}`, { token: owner })).status).toBe(200);
  });
});

describe("GET /v1/build/<build_id>/log", () => {
  it("gives the whole text the agent uploaded, as text/plain, kept up to 4 MiB with the cut note", async () => {
    const { agent, token, id, assign } = await buildingBuild("log-text-1");
    // What an agent uploads for a log past the cap (agent/work/bounded-build-log.ts): 4 MiB of lines, then the note.
    const line = "y".repeat(1023);
    const kept = BUILD_LOG_TEXT_BYTES / 1024;
    const text = `${`${line}\n`.repeat(kept)}${textCutNote(20_000 - kept)}\n`;
    expect((await putText(assign.logPath!, agent.token, text)).status).toBe(204);
    sendEveryLine(agent, id, 20_000, 200, () => line);
    await eventually(async () => (await callJson(`/v1/build/${id}`, 200, { token })).logLines === 20_000, 20_000);
    await finished(agent, token, id);
    const res = await call(`/v1/build/${id}/log`, { token });
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toBe("text/plain; charset=utf-8");
    const body = await res.text();
    expect(body.length).toBe(text.length);
    expect(body === text).toBe(true); // not toEqual: a diff of 4 MiB would not fit in memory
    expect(body.endsWith(`… ${20_000 - kept} lines cut: the whole log keeps its first 4194304 bytes (GET /v1/build/<id> shows the last lines) …\n`)).toBe(true);
  });

  it("refuses an upload past the cap (413), and one after the build ended (404)", async () => {
    const { agent, token, id, assign } = await buildingBuild("log-text-2");
    const over = new Uint8Array(BUILD_LOG_TEXT_BYTES + BUILD_LOG_TRAILER_BYTES + 1).fill(0x61);
    await expectError(putText(assign.logPath!, agent.token, over), 413, "payload_too_large");
    await finished(agent, token, id);
    await expectError(putText(assign.logPath!, agent.token, "late\n"), 404, "not_found");
  });

  it("is the record's lines while the build runs, and for a build whose agent uploaded none", async () => {
    const { agent, token, id } = await buildingBuild("log-text-3");
    sendEveryLine(agent, id, 1200, 600);
    await eventually(async () => (await callJson(`/v1/build/${id}`, 200, { token })).logLines === 1200, 10_000);
    const expected = [...range(0, 500), cutMarker(200), ...range(700, 1200)];
    expect(await (await call(`/v1/build/${id}/log`, { token })).text()).toBe(`${expected.join("\n")}\n`);
    await finished(agent, token, id, false);
    expect(await (await call(`/v1/build/${id}/log`, { token })).text()).toBe(`${[...range(0, 500), cutMarker(201), ...range(701, 1200), "build failed: exit status 1"].join("\n")}\n`);
  });

  it("ends with a failure the dispatcher recorded after the agent's upload", async () => {
    const { agent, token, id, assign } = await buildingBuild("log-text-4");
    agent.send({ type: "build.log", buildId: id, first: 0, lines: ["compiling"] });
    expect((await putText(assign.logPath!, agent.token, "compiling\n")).status).toBe(204);
    await eventually(async () => (await callJson(`/v1/build/${id}`, 200, { token })).logLines === 1);
    // The agent went quiet: what the dispatcher does when a build's time runs out.
    await sql("update builds set status = 'FAILED' where id = ?", id);
    await sql("update build_log_ends set tail = json_array('build failed: no result from the agent in time'), lines = 2 where build_id = ?", id);
    expect(await (await call(`/v1/build/${id}/log`, { token })).text()).toBe("compiling\nbuild failed: no result from the agent in time\n");
  });

  it("answers 404 to another account and for an unknown build", async () => {
    const { agent, id, assign } = await buildingBuild("log-other-2");
    expect((await putText(assign.logPath!, agent.token, "secret\n")).status).toBe(204);
    const { token: other } = await newAccount("other");
    await expectError(call(`/v1/build/${id}/log`, { token: other }), 404, "not_found");
    await expectError(call("/v1/build/nosuchbuild/log", { token: other }), 404, "not_found");
  });
});

describe("the console's build page", () => {
  const asConsole = (token: string, path: string) => call(path, { headers: { cookie: `gc_console=${token}` } });

  it("says the log is cut and links the whole log, which it serves as text; another account's is 404", async () => {
    const { agent, token, id } = await buildingBuild("log-console");
    sendEveryLine(agent, id, 1200, 600);
    await eventually(async () => (await callJson(`/v1/build/${id}`, 200, { token })).logLines === 1200, 10_000);
    const page = await (await asConsole(token, `/console/builds/${id}`)).text();
    expect(page).toContain(`href="/console/builds/${id}/log"`);
    expect(page).toContain(cutMarker(200));
    const log = await asConsole(token, `/console/builds/${id}/log`);
    expect([log.status, log.headers.get("content-type"), log.headers.get("x-content-type-options")]).toEqual([200, "text/plain; charset=utf-8", "nosniff"]);
    expect((await log.text()).split("\n").slice(499, 502)).toEqual(["line 499", cutMarker(200), "line 700"]);
    const { token: other } = await newAccount("other");
    expect((await asConsole(other, `/console/builds/${id}/log`)).status).toBe(404);
  });
});

describe("builds recorded before build_log_ends (a row per line)", () => {
  it("still read: the record shows their ends, the log route their whole text", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    const { id } = await uploadBuild(token, fn);
    await sql("update builds set status = 'FAILED' where id = ?", id);
    for (let first = 0; first < 1200; first += 30) {
      const seqs = range(first, first + 30, String).map(Number);
      await sql(`insert into build_logs (build_id, seq, line) values ${seqs.map(() => "(?, ?, ?)").join(", ")}`, ...seqs.flatMap((s) => [id, s, lineOf(s)]));
    }
    await sql("insert into build_logs (build_id, seq, line) values (?, 1000000000, 'build failed: old')", id);
    const build = await callJson(`/v1/build/${id}`, 200, { token });
    expect(build.log).toEqual([...range(0, 500), cutMarker(201), ...range(701, 1200), "build failed: old"]);
    expect(build.logLines).toBe(1201);
    expect(await (await call(`/v1/build/${id}/log`, { token })).text()).toBe(`${[...range(0, 1200), "build failed: old"].join("\n")}\n`);
  });
});

describe("DELETE /v1/function/<id> with a build log", () => {
  it("deletes the log's row and its text object", async () => {
    const { agent, token, accountId, fn, id, assign } = await buildingBuild("log-delete");
    agent.send({ type: "build.log", buildId: id, first: 0, lines: ["compiling"] });
    expect((await putText(assign.logPath!, agent.token, "compiling\n")).status).toBe(204);
    await finished(agent, token, id);
    const key = `acct/${accountId}/fn/${fn}/builds/${id}/log.txt`;
    expect(await env.BUCKET.head(key)).not.toBeNull();
    expect((await call(`/v1/function/${fn}`, { token, method: "DELETE" })).status).toBe(204);
    await eventually(async () => (await env.BUCKET.head(key)) === null);
    expect((await logRows(id)).rows).toBe(0);
  });
});
