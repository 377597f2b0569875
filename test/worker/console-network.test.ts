import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { callJson, grantEgress, newAccount, newFunction } from "./helpers.js";
import { csrfToken } from "../../worker/console/session.js";

/** The function page's Network box: egress shown, switched by a CSRF-guarded form, the missing grant said plainly. */
async function page(token: string, fn: string): Promise<string> {
  const res = await SELF.fetch(`https://api.test/console/functions/${fn}`, { headers: { cookie: `gc_console=${token}` } });
  expect(res.status).toBe(200);
  return res.text();
}

async function setEgress(token: string, fn: string, egress: string, csrf?: string): Promise<Response> {
  const body = new URLSearchParams({ egress, _csrf: csrf ?? (await csrfToken(token)) });
  return SELF.fetch(`https://api.test/console/functions/${fn}/network`, {
    method: "POST",
    headers: { cookie: `gc_console=${token}`, "content-type": "application/x-www-form-urlencoded", origin: "https://api.test" },
    body,
    redirect: "manual",
  });
}

const network = (token: string, fn: string) => callJson(`/v1/function/${fn}/network`, 200, { token });

describe("the function page's Network box", () => {
  it("says plainly that the account has no grant, offers no switch, and shows the API's refusal of a forged one", async () => {
    const { token } = await newAccount();
    const fn = await newFunction(token);
    const html = await page(token, fn);
    expect(html).toContain('<h2 id="network-h">Network</h2>');
    expect(html).toContain("<strong>No network</strong>");
    expect(html).toContain("This account has no grant for network egress");
    expect(html).not.toContain("Allow internet access");
    const res = await setEgress(token, fn, "internet");
    expect(res.status).toBe(403);
    expect(await res.text()).toContain("egress_not_allowed");
    expect(await network(token, fn)).toEqual({ egress: "none" });
  });

  it("switches a granted account's function to internet and back, and the page shows each state", async () => {
    const { token, accountId } = await newAccount();
    await grantEgress(accountId);
    const fn = await newFunction(token);
    expect(await page(token, fn)).toContain("Allow internet access");
    const on = await setEgress(token, fn, "internet");
    expect([on.status, on.headers.get("location")]).toEqual([303, `/console/functions/${fn}?done=${encodeURIComponent("Internet access allowed.")}`]);
    expect(await network(token, fn)).toEqual({ egress: "internet" });
    const html = await page(token, fn);
    expect(html).toContain("<strong>Internet</strong>: the function reaches public addresses only");
    expect(html).toContain("Turn network off");
    expect((await setEgress(token, fn, "none")).status).toBe(303);
    expect(await network(token, fn)).toEqual({ egress: "none" });
  });

  it("refuses a change without the session's CSRF token, and another account's function", async () => {
    const { token, accountId } = await newAccount();
    await grantEgress(accountId);
    const fn = await newFunction(token);
    expect((await setEgress(token, fn, "internet", "forged")).status).toBe(403);
    expect(await network(token, fn)).toEqual({ egress: "none" });
    const stranger = await newAccount();
    await grantEgress(stranger.accountId);
    expect((await setEgress(stranger.token, fn, "internet")).status).toBe(404);
    expect(await network(token, fn)).toEqual({ egress: "none" });
  });
});
