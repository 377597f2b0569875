import { SELF } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { call, markBuild, newAccount, newFunction, uploadBuild } from "./helpers.js";
import { csrfToken } from "../../worker/console/session.js";

/** A signed-in console session (the cookie the sign-in page sets) and its CSRF token. */
async function session() {
  const { token } = await newAccount();
  return { token, cookie: `gc_console=${token}`, csrf: await csrfToken(token) };
}

const functionPage = async (fn: string, cookie: string) => {
  const res = await call(`/console/functions/${fn}`, { headers: { cookie } });
  expect(res.status).toBe(200);
  return res.text();
};

describe("console: a function before its first successful build", () => {
  it("hides the build's Timeline and Log until a deploy starts", async () => {
    const s = await session();
    const fn = await newFunction(s.token);
    const html = await functionPage(fn, s.cookie);
    expect(html).toContain('<div id="build-progress" hidden>');
    expect(html).toMatch(/<div id="build-progress" hidden>\s*<h3[^>]*>Timeline<\/h3><pre id="build-timeline"/);
  });

  it("hides Invoke and says to deploy a build first", async () => {
    const s = await session();
    const fn = await newFunction(s.token);
    const html = await functionPage(fn, s.cookie);
    expect(html).toContain('<p id="invoke-needs-build" class="hint">No successful build yet: deploy a build first');
    expect(html).toMatch(/<form id="invoke-form" method="post" action="\/console\/functions\/[^"]+\/invoke" hidden>/);
  });

  it("still hides Invoke when the only build failed", async () => {
    const s = await session();
    const fn = await newFunction(s.token);
    await markBuild((await uploadBuild(s.token, fn)).id, "FAILED");
    const html = await functionPage(fn, s.cookie);
    expect(html).toContain("deploy a build first");
    expect(html).toMatch(/<form id="invoke-form"[^>]* hidden>/);
  });

  it("offers Invoke once a build succeeded", async () => {
    const s = await session();
    const fn = await newFunction(s.token);
    await markBuild((await uploadBuild(s.token, fn)).id, "SUCCESS");
    const html = await functionPage(fn, s.cookie);
    expect(html).not.toContain('id="invoke-needs-build"');
    expect(html).toMatch(/<form id="invoke-form" method="post" action="\/console\/functions\/[^"]+\/invoke">/);
  });

  it("names the console action, not an HTTP route, when Invoke is posted anyway", async () => {
    const s = await session();
    const fn = await newFunction(s.token);
    const res = await SELF.fetch(`https://api.test/console/functions/${fn}/invoke`, {
      method: "POST",
      redirect: "manual",
      body: new URLSearchParams({ _csrf: s.csrf, query: "", contentType: "application/json", body: "{}" }).toString(),
      headers: { cookie: s.cookie, origin: "https://api.test", "content-type": "application/x-www-form-urlencoded" },
    });
    const html = await res.text();
    expect(res.status).toBe(409);
    expect(html).toContain("deploy a build first (drop a zip of its files on Deploy");
    expect(html).toContain("(no_successful_build)");
    expect(html).not.toContain("POST /v1/build");
  });
});

describe("console: the deploy drop zone", () => {
  it("asks for a zip of the function's files, not of its folder", async () => {
    const s = await session();
    const html = await functionPage(await newFunction(s.token), s.cookie);
    expect(html).toContain("Drop a zip of the function's files here (select the files inside its folder and zip those, not the folder)");
    expect(html).not.toContain("Drop a zip of the function's folder");
  });
});
