import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { callJson, newAccount, newFunction } from "./helpers.js";
import { csrfToken } from "../../worker/console/session.js";

/** The function page's configuration section: variables shown, secrets by name only, changes by CSRF-guarded forms. */
const SECRET = "sk_live_console-never-shows-me";

async function page(token: string, fn: string): Promise<string> {
  const res = await SELF.fetch(`https://api.test/console/functions/${fn}`, { headers: { cookie: `gc_console=${token}` } });
  expect(res.status).toBe(200);
  return res.text();
}

async function post(token: string, path: string, fields: Record<string, string>, csrf?: string): Promise<Response> {
  const body = new URLSearchParams({ ...fields, ...(csrf === undefined ? { _csrf: await csrfToken(token) } : { _csrf: csrf }) });
  return SELF.fetch(`https://api.test/console${path}`, {
    method: "POST",
    headers: { cookie: `gc_console=${token}`, "content-type": "application/x-www-form-urlencoded", origin: "https://api.test" },
    body,
    redirect: "manual",
  });
}

describe("the function page's configuration section", () => {
  it("sets and removes variables, sets and deletes secrets, and never shows a secret's value", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    expect((await post(token, `/functions/${fn}/env`, { name: "REGION", value: "eu-west" })).status).toBe(303);
    expect((await post(token, `/functions/${fn}/secrets`, { name: "API_KEY", value: SECRET })).status).toBe(303);
    const html = await page(token, fn);
    expect(html).toContain("Configuration");
    expect(html).toContain("REGION");
    expect(html).toContain("eu-west");
    expect(html).toContain("API_KEY");
    expect(html).not.toContain(SECRET);
    expect(await callJson(`/v1/function/${fn}/env`, 200, { token })).toEqual({ REGION: "eu-west" });

    expect((await post(token, `/functions/${fn}/env/delete`, { name: "REGION" })).status).toBe(303);
    expect((await post(token, `/functions/${fn}/secrets/delete`, { name: "API_KEY" })).status).toBe(303);
    expect(await callJson(`/v1/function/${fn}/env`, 200, { token })).toEqual({});
    expect(await callJson(`/v1/function/${fn}/secrets`, 200, { token })).toEqual([]);
  });

  it("shows the API's refusal on the page", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    await post(token, `/functions/${fn}/env`, { name: "TAKEN", value: "x" });
    const res = await post(token, `/functions/${fn}/secrets`, { name: "TAKEN", value: SECRET });
    expect(res.status).toBe(409);
    const html = await res.text();
    expect(html).toContain("name_taken");
    expect(html).not.toContain(SECRET);
    const bad = await post(token, `/functions/${fn}/env`, { name: "GCFAAS_X", value: "x" });
    expect(bad.status).toBe(400);
    expect(await bad.text()).toContain("reserved");
  });

  it("refuses a change without the session's CSRF token", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    expect((await post(token, `/functions/${fn}/secrets`, { name: "API_KEY", value: SECRET }, "forged")).status).toBe(403);
    expect(await callJson(`/v1/function/${fn}/secrets`, 200, { token })).toEqual([]);
  });
});

describe("the console's header", () => {
  it("links to the API reference at /docs", async () => {
    const { token } = await newAccount();
    expect(await page(token, await newFunction(token))).toContain('<a href="/docs/">API reference</a>');
  });
});
