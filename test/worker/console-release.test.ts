import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call, callJson, markBuild, newAccount, newFunction, uploadBuild } from "./helpers.js";
import { csrfToken } from "../../worker/console/session.js";

/** A signed-in console session (the cookie the sign-in page sets) and its CSRF token. */
async function session() {
  const { token } = await newAccount();
  return { token, cookie: `gc_console=${token}`, csrf: await csrfToken(token) };
}

async function functionWithBuilds(token: string, statuses: ("SUCCESS" | "FAILED")[]) {
  const fn = await newFunction(token);
  const builds: string[] = [];
  for (const s of statuses) {
    const { id } = await uploadBuild(token, fn);
    await markBuild(id, s);
    builds.push(id);
  }
  return { fn, builds };
}

const page = async (path: string, cookie: string) => {
  const res = await call(path, { headers: { cookie } });
  expect(res.status).toBe(200);
  return res.text();
};

/** A console form post, from `origin` (the console's own by default); its redirect is not followed. */
const post = (path: string, cookie: string, fields: Record<string, string>, origin = "https://api.test") =>
  SELF.fetch(`https://api.test${path}`, {
    method: "POST",
    redirect: "manual",
    body: new URLSearchParams(fields).toString(),
    headers: { cookie, origin, "content-type": "application/x-www-form-urlencoded" },
  });

const release = (token: string, fn: string) => callJson(`/v1/function/${fn}/release`, 200, { token });

describe("console: the function page's release", () => {
  it("shows the build that runs and whether it is pinned, and the canary", async () => {
    const s = await session();
    const { fn, builds } = await functionWithBuilds(s.token, ["SUCCESS", "SUCCESS"]);
    const before = await page(`/console/functions/${fn}`, s.cookie);
    expect(before).toContain('<h2 id="release-h">Release</h2>');
    expect(before).toContain(`<code>${builds[1]}</code></a> (the newest successful build)`);
    await call(`/v1/function/${fn}/release`, { token: s.token, method: "PUT", json: { buildId: builds[0], canary: { buildId: builds[1], weight: 15 } } });
    const after = await page(`/console/functions/${fn}`, s.cookie);
    expect(after).toContain(`<code>${builds[0]}</code></a> (pinned)`);
    expect(after).toContain(`<code>${builds[1]}</code></a> takes 15 % of new tasks`);
  });

  it("starts a canary, rolls back and follows the newest again through its forms", async () => {
    const s = await session();
    const { fn, builds } = await functionWithBuilds(s.token, ["SUCCESS", "SUCCESS", "SUCCESS"]);
    const canary = await post(`/console/functions/${fn}/release`, s.cookie, { _csrf: s.csrf, buildId: "", canaryBuildId: builds[1]!, canaryWeight: "20" });
    expect(canary.status).toBe(303);
    expect(await release(s.token, fn)).toEqual({ buildId: builds[2], pinned: false, canary: { buildId: builds[1], weight: 20 } });
    expect((await post(`/console/functions/${fn}/rollback`, s.cookie, { _csrf: s.csrf })).status).toBe(303);
    expect(await release(s.token, fn)).toEqual({ buildId: builds[1], pinned: true, canary: null });
    expect((await post(`/console/functions/${fn}/release`, s.cookie, { _csrf: s.csrf, buildId: "" })).status).toBe(303);
    expect(await release(s.token, fn)).toEqual({ buildId: builds[2], pinned: false, canary: null });
  });
});

describe("console: release this build, from the builds list", () => {
  it("offers each successful build, marks the one that runs, and pins the one chosen", async () => {
    const s = await session();
    const { fn, builds } = await functionWithBuilds(s.token, ["SUCCESS", "FAILED", "SUCCESS"]);
    const list = await page(`/console/builds?functionId=${fn}`, s.cookie);
    const offered = [...list.matchAll(/name="buildId" value="([0-9a-z]+)"/g)].map((m) => m[1]);
    expect(offered.sort()).toEqual([builds[0], builds[2]].sort());
    expect(list).toContain(`${builds[2]}</a> <span class="status ok">runs now</span>`);
    const res = await post(`/console/functions/${fn}/release`, s.cookie, { _csrf: s.csrf, buildId: builds[0]! });
    expect(res.status).toBe(303);
    expect(res.headers.get("location")).toContain(`/console/functions/${fn}?done=`);
    expect(await release(s.token, fn)).toEqual({ buildId: builds[0], pinned: true, canary: null });
    expect(await page(`/console/builds?functionId=${fn}`, s.cookie)).toContain(`${builds[0]}</a> <span class="status ok">pinned</span>`);
  });

  it("refuses a change without the session's CSRF token or from another origin, and shows the API's refusal", async () => {
    const s = await session();
    const { fn, builds } = await functionWithBuilds(s.token, ["SUCCESS", "FAILED", "SUCCESS"]);
    expect((await post(`/console/functions/${fn}/release`, s.cookie, { _csrf: "guess", buildId: builds[0]! })).status).toBe(403);
    expect((await post(`/console/functions/${fn}/release`, s.cookie, { _csrf: s.csrf, buildId: builds[0]! }, "https://evil.test")).status).toBe(403);
    const failed = await post(`/console/functions/${fn}/release`, s.cookie, { _csrf: s.csrf, buildId: builds[1]! });
    expect(failed.status).toBe(409);
    expect(await failed.text()).toContain("(build_not_ready)");
    expect(await release(s.token, fn)).toEqual({ buildId: builds[2], pinned: false, canary: null });
  });
});
