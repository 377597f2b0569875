import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { call, callDirect, callJson, clearQueue, deployedFunction, expectError, finishTask, newAccount, newEndpoint, newTask, onRowlessTasks } from "./helpers.js";
import { eventually, FakeAgent } from "./fake-agent.js";
import { publicResultWaits, ResultWaits } from "../../worker/public/result-waits.js";

// Tasks as deployed: rowless (docs/dispatch.md, "Step 4 as built"); these tests read them through the API alone.
onRowlessTasks();

beforeEach(clearQueue);
afterEach(async () => {
  vi.useRealTimers();
  await FakeAgent.closeAll();
});

async function publicEndpoint(name = "acme") {
  const acct = await newAccount(name);
  const fn = await deployedFunction(acct.token);
  return { ...acct, fn, ep: await newEndpoint(acct.token, fn) };
}

const callEndpoint = async (ep: string) => ((await callJson<{ id: string }>(`/gc/${ep}`, 201, { method: "POST" })).id);

const DIGITS = "0123456789abcdefghjkmnpqrstvwxyz";
/** The id one above or below, read as a base-32 number: what a counter would mint next or before. */
function neighbour(id: string, step: 1 | -1): string {
  const d = [...id].map((ch) => DIGITS.indexOf(ch));
  for (let i = d.length - 1; i >= 0; i--) {
    d[i]! += step;
    if (d[i]! >= 0 && d[i]! < 32) break;
    d[i] = step === 1 ? 0 : 31;
  }
  return d.map((n) => DIGITS[n]).join("");
}

describe("guessing a public result link", () => {
  it("finds nothing next to one's own ids, even for calls in the same millisecond as the victim's", async () => {
    const victim = await publicEndpoint("victim");
    const attacker = await publicEndpoint("attacker");
    vi.useFakeTimers({ toFake: ["Date"] });
    vi.setSystemTime(new Date("2026-11-21T12:00:00Z")); // every id below is minted in one millisecond
    const [victimTask, ...own] = await Promise.all([callEndpoint(victim.ep), ...Array.from({ length: 12 }, () => callEndpoint(attacker.ep))]);
    await finishTask(victimTask!, { body: "victim secret", contentType: "text/plain" });
    const probes = own.flatMap((id) => [neighbour(id, 1), neighbour(id, -1)]).filter((id) => !own.includes(id));
    expect(probes).not.toContain(victimTask);
    for (const probe of probes) await expectError(call(`/gc/${probe}/result`), 404, "not_found");
    expect(await (await call(`/gc/${victimTask}/result`)).text()).toBe("victim secret");
  });
});

describe("active content in a result", () => {
  const PAGE = "<html><script>fetch('/v1/account', {credentials: 'include'})</script></html>";

  it("is served sandboxed and unsniffed, on /gc and /v1 alike, with none of the function's other headers", async () => {
    const { ep, token } = await publicEndpoint();
    const id = await callEndpoint(ep);
    await finishTask(id, { body: PAGE, headers: { "content-type": "text/html", "set-cookie": "session=stolen; Path=/" } });
    for (const res of [await call(`/gc/${id}/result`), await call(`/v1/task/${id}/result`, { token })]) {
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/html");
      expect(res.headers.get("content-security-policy")).toBe("sandbox");
      expect(res.headers.get("x-content-type-options")).toBe("nosniff");
      expect(res.headers.get("set-cookie")).toBeNull();
      expect(await res.text()).toBe(PAGE);
    }
  });

  it("keeps the headers on answers before the task finished", async () => {
    const { ep } = await publicEndpoint();
    const res = await call(`/gc/${await callEndpoint(ep)}/result`);
    expect(res.headers.get("content-security-policy")).toBe("sandbox");
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
  });
});

describe("a recorded status that no HTTP response can carry", () => {
  it("answers 502 invalid_result_status instead of failing the read", async () => {
    const { ep, token, fn } = await publicEndpoint();
    const pub = await callEndpoint(ep);
    const own = await newTask(token, fn);
    for (const id of [pub, own]) await finishTask(id, { status: 103, body: "early hints", contentType: "text/plain" });
    await expectError(call(`/gc/${pub}/result`), 502, "invalid_result_status");
    await expectError(call(`/v1/task/${own}/result`, { token }), 502, "invalid_result_status");
    expect((await callJson(`/v1/task/${own}`, 200, { token })).status).toBe(103);
  });
});

describe("long polls on a public result", () => {
  it("holds at most the per-task bound; one more answers at once, and the held ones get the result", async () => {
    const agent = await FakeAgent.connect("long-polls");
    const { ep } = await publicEndpoint();
    const id = await callEndpoint(ep);
    await agent.next("task.assign");
    const settled: boolean[] = [];
    const held = Array.from({ length: publicResultWaits.perTask }, (_, i) =>
      callDirect(`/gc/${id}/result?wait=30`).finally(() => (settled[i] = true)),
    );
    await eventually(async () => publicResultWaits.waitingOn(id) === publicResultWaits.perTask);
    const extra = await callDirect(`/gc/${id}/result?wait=30`);
    expect(extra.status).not.toBe(200); // the task's state now: not finished
    expect(settled.some(Boolean)).toBe(false);
    agent.done(id, "worth the wait");
    for (const res of await Promise.all(held)) expect([res.status, await res.text()]).toEqual([200, "worth the wait"]);
    expect(publicResultWaits.waitingOn(id)).toBe(0);
    await agent.close();
  });

  it("are bounded per isolate too, and a released slot is free again", () => {
    const waits = new ResultWaits(2, 3);
    const slots = [waits.take("a"), waits.take("a"), waits.take("b")];
    expect(slots.every(Boolean)).toBe(true);
    expect(waits.take("a")).toBeNull(); // per task
    expect(waits.take("c")).toBeNull(); // per isolate
    slots[0]!();
    slots[0]!(); // releasing twice frees one slot only
    expect(waits.take("c")).not.toBeNull();
    expect(waits.take("d")).toBeNull();
  });
});
