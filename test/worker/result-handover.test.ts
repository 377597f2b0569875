import { env, SELF } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { call, callJson, clearQueue, deployedFunction, newAccount, newTrigger, flushedDb } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";
import { JsonScanner } from "../../worker/lib/json-scan.js";

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const parents = new Map<string, string>();
const parentOf = (child: { taskId: string }) => parents.get(child.taskId)!;

/** Runs a → b (includeResult): a answers `result` (uploaded, as an agent does past the frame budget); gives b's assignment and input. */
async function handOver(result: Uint8Array, contentType: string) {
  const agent = await FakeAgent.connect(`handover-${Math.random().toString(36).slice(2, 8)}`);
  const { token } = await newAccount();
  const [a, b] = [await deployedFunction(token, { name: "a" }), await deployedFunction(token, { name: "b" })];
  await newTrigger(token, { functionId: a, nextId: b, includeResult: true });
  const { id: first } = await callJson<{ id: string }>(`/v1/task/${a}`, 201, { token, method: "POST" });
  const run = await agent.next("task.assign");
  expect(run.taskId).toBe(first);
  const put = await SELF.fetch(`https://api.test${run.resultPath}`, { method: "PUT", headers: { authorization: `Bearer ${agent.token}`, "content-length": String(result.byteLength) }, body: result });
  expect(put.status).toBe(204);
  agent.done(first, "", 200, { body: null, bodyUploaded: true, headers: { "content-type": contentType } });
  const second = await agent.next("task.assign", 20_000);
  const row = await (await flushedDb()).prepare("select input, input_key as inputKey from tasks where id = ?").bind(second.taskId).first<{ input: string | null; inputKey: string | null }>();
  const input = (await (await call(second.inputPath, { token: agent.token })).json()) as { headers: Record<string, string>; body: string; bodyEncoding?: string };
  await agent.close();
  parents.set(second.taskId, first);
  return { second, row, input };
}

describe("a trigger with includeResult, the result stored in R2", () => {
  it("hands a 3 MiB binary result on byte for byte with its Content-Type, by reference and never by value", async () => {
    const bytes = new Uint8Array(3 * 1024 * 1024 + 1);
    for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 131 + (i >> 11)) & 0xff;
    const { second, row, input } = await handOver(bytes, "image/png");
    // Neither the assignment nor the D1 row holds the body: the row names the input's R2 object.
    expect(second.input).toBeNull();
    expect(row).toEqual({ input: null, inputKey: expect.stringMatching(/input\.json$/) });
    // Written by stream from the parent's stored result, not from a body built in memory.
    const stored = await env.BUCKET.head(row!.inputKey!);
    expect(stored?.customMetadata).toEqual({ streamedFrom: expect.stringMatching(new RegExp(`/tasks/${parentOf(second)}/result\\.bin$`)) });
    expect(input.headers).toEqual({ "content-type": "image/png" });
    expect(input.bodyEncoding).toBe("base64");
    const got = Uint8Array.from(atob(input.body), (c) => c.charCodeAt(0));
    expect(got.byteLength).toBe(bytes.byteLength);
    expect(got.every((b, i) => b === bytes[i])).toBe(true);
    // The input is the chained task's own object: the parent's result going (retention) leaves it whole.
    await env.BUCKET.delete(stored!.customMetadata!.streamedFrom!);
    expect(JSON.parse(await (await env.BUCKET.get(row!.inputKey!))!.text()).body).toBe(input.body);
  });

  it("hands JSON text on as it is, as application/json", async () => {
    const text = JSON.stringify({ rows: Array.from({ length: 3000 }, (_, i) => ({ i, s: `é "q" \\ \n ${"x".repeat(i % 7)} 😀` })) });
    const { row, input } = await handOver(new TextEncoder().encode(text), "application/json");
    expect(row?.input).toBeNull();
    expect(input.headers).toEqual({ "content-type": "application/json" });
    expect(input.bodyEncoding).toBeUndefined();
    expect(input.body).toBe(text);
  });

  it("hands other text on as a JSON string, as application/json", async () => {
    const text = `\uFEFFname,quote\n${Array.from({ length: 4000 }, (_, i) => `${i},"a \\ b" ✓ 😀\t`).join("\n")}`;
    const { input } = await handOver(new TextEncoder().encode(text), "text/csv");
    expect(input.headers).toEqual({ "content-type": "application/json" });
    expect(input.body).toBe(JSON.stringify(text));
  });
});

describe("JsonScanner", () => {
  const texts = [
    "0", "-0", "1.5e+3", "-12.75E-2", " true ", "null", "false", '""', '"a\\u00e9\\n\\"b"', "[]", "{}", " [1, [2, {\"a\": [null]}]] ",
    '{"a":1,"b":{"c":[true,false,null,"x"]}}', "\t\r\n{ \"k\" : \"v\" }\n",
    "", " ", "01", "1.", ".5", "+1", "-", "1e", "1e+", "tru", "nul", "[1,]", "{,}", '{"a":1,}', '{"a"}', '{"a" 1}', "[1 2]", "1 2",
    '"unterminated', '"bad \\x escape"', '"\\u12g4"', '"tab\there"', "{'a':1}", "[", "]", "{", "}", "\uFEFF1", "NaN", "[1]]", "{}{}",
  ];
  for (const text of texts)
    it(`agrees with JSON.parse on ${JSON.stringify(text)}, however the text is cut`, () => {
      let parses = true;
      try {
        JSON.parse(text);
      } catch {
        parses = false;
      }
      for (let cut = 0; cut <= text.length; cut++) {
        const s = new JsonScanner();
        s.write(text.slice(0, cut));
        s.write(text.slice(cut));
        expect(s.end(), `cut at ${cut}`).toBe(parses);
      }
    });
});
