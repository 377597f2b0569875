import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call, callJson, newAccount, newFunction } from "./helpers.js";
import { csrfToken } from "../../worker/console/session.js";

async function session() {
  const { token } = await newAccount();
  return { token, cookie: `gc_console=${token}`, csrf: await csrfToken(token) };
}

const page = async (path: string, cookie: string) => {
  const res = await call(path, { headers: { cookie } });
  expect(res.status).toBe(200);
  return res.text();
};

const post = (path: string, cookie: string, fields: Record<string, string>) =>
  SELF.fetch(`https://api.test${path}`, {
    method: "POST",
    redirect: "manual",
    body: new URLSearchParams(fields).toString(),
    headers: { cookie, origin: "https://api.test", "content-type": "application/x-www-form-urlencoded" },
  });

describe("console: the function page's retries and concurrency", () => {
  it("shows the policy and the cap, and saves both through their forms", async () => {
    const s = await session();
    const [fn, dl] = [await newFunction(s.token, { name: "orders" }), await newFunction(s.token, { name: "failures" })];
    const before = await page(`/console/functions/${fn}`, s.cookie);
    expect(before).toContain('<h2 id="retry-h">Retries and concurrency</h2>');
    expect(before).toMatch(/id="retry-attempts"[^>]*value="1"/);
    expect(before).toMatch(/id="concurrency-max"[^>]*value=""/);
    expect((await post(`/console/functions/${fn}/retry`, s.cookie, { _csrf: s.csrf, maxAttempts: "3", backoffSeconds: "30", deadLetterFunctionId: dl })).status).toBe(303);
    expect((await post(`/console/functions/${fn}/concurrency`, s.cookie, { _csrf: s.csrf, max: "4" })).status).toBe(303);
    expect(await callJson(`/v1/function/${fn}/retry`, 200, { token: s.token })).toEqual({ maxAttempts: 3, backoffSeconds: 30, deadLetterFunctionId: dl });
    expect(await callJson(`/v1/function/${fn}/concurrency`, 200, { token: s.token })).toEqual({ max: 4 });
    const after = await page(`/console/functions/${fn}`, s.cookie);
    expect(after).toContain(`<option value="${dl}" selected>failures (${dl})</option>`);
    expect(after).toMatch(/id="concurrency-max"[^>]*value="4"/);
    expect((await post(`/console/functions/${fn}/concurrency`, s.cookie, { _csrf: s.csrf, max: "" })).status).toBe(303);
    expect(await callJson(`/v1/function/${fn}/concurrency`, 200, { token: s.token })).toEqual({ max: null });
  });

  it("shows the API's refusal and changes nothing", async () => {
    const s = await session();
    const fn = await newFunction(s.token);
    const refused = await post(`/console/functions/${fn}/retry`, s.cookie, { _csrf: s.csrf, maxAttempts: "9", backoffSeconds: "10", deadLetterFunctionId: "" });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain("maxAttempts");
    expect((await post(`/console/functions/${fn}/concurrency`, s.cookie, { _csrf: "guess", max: "2" })).status).toBe(403);
    expect(await callJson(`/v1/function/${fn}/retry`, 200, { token: s.token })).toEqual({ maxAttempts: 1, backoffSeconds: 10, deadLetterFunctionId: null });
    expect(await callJson(`/v1/function/${fn}/concurrency`, 200, { token: s.token })).toEqual({ max: null });
  });
});
