import fs from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { launchBrowser } from "../support/browser.js";
import { zipFolder } from "../support/zip.js";
import { ADMIN_TOKEN, AgentProcess, api, LocalWorker, ROOT, type Api } from "./harness.js";
import { deploy } from "./deploy.js";

/**
 * The console in a real browser (Debian's Chromium) against the local service with a real agent:
 * what a new user with only a token does, in the order the issue lists it.
 */
let worker: LocalWorker;
let agent: AgentProcess;
let browser: Browser;
let owner: { token: string; api: Api };
let stranger: { token: string; api: Api };
let zipPath: string;

beforeAll(async () => {
  await ensureOfflineImages(["py"]);
  worker = await LocalWorker.create();
  const admin = api(worker.url, ADMIN_TOKEN);
  const account = async (name: string) => {
    const { token } = await admin.json("POST", "/v1/admin/accounts", 201, { json: { name } });
    return { token: token as string, api: api(worker.url, token) };
  };
  owner = await account("console");
  stranger = await account("stranger");
  const agentToken = await worker.agentToken("console-agent");
  agent = await AgentProcess.start(worker, agentToken, "console-agent", ["--slots", "2", "--langs", "py"]);
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "gcfaas-console-"));
  zipPath = path.join(dir, "hello.zip");
  await fs.writeFile(zipPath, await zipFolder(path.join(ROOT, "examples/python/hello")));
  browser = await launchBrowser();
}, 1_800_000);

afterAll(async () => {
  await browser?.close();
  await agent?.stop();
  await worker?.dispose();
});

async function signIn(context: BrowserContext, token: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${worker.url}/console`);
  expect(new URL(page.url()).pathname).toBe("/console/signin");
  await page.fill("#token", token);
  await Promise.all([page.waitForURL(`${worker.url}/console`), page.click("button[type=submit]")]);
  return page;
}

const text = (page: Page, selector: string) => page.locator(selector).first().innerText();

describe("the console, as a new user with a token", () => {
  let context: BrowserContext;
  let page: Page;
  let functionId: string;

  beforeAll(async () => {
    context = await browser.newContext();
    page = await signIn(context, owner.token);
  });
  afterAll(() => context?.close());

  it("signs in with the token into an HttpOnly, SameSite=Strict session cookie", async () => {
    const [cookie] = await context.cookies();
    expect(cookie).toMatchObject({ name: "gc_console", httpOnly: true, sameSite: "Strict", path: "/console" });
    expect(await text(page, "h1")).toBe("Functions");
  });

  it("brings a page in under 150 KB over the wire: the document and its one script", async () => {
    const seen: Promise<number>[] = [];
    const count = (r: import("playwright-core").Response) => seen.push(r.body().then((b) => b.length, () => 0));
    page.on("response", count);
    await page.goto(`${worker.url}/console`, { waitUntil: "networkidle" });
    page.off("response", count);
    const bytes = (await Promise.all(seen)).reduce((a, b) => a + b, 0);
    expect(seen.length).toBeLessThanOrEqual(2);
    expect(bytes).toBeLessThan(150 * 1024);
  });

  it("creates a function", async () => {
    await page.fill("#fn-name", "consolefn");
    await page.fill("#fn-desc", "made in the browser");
    await page.selectOption("#fn-lang", "PY");
    await Promise.all([page.waitForURL(/\/console\/functions\/[0-9a-z]+/), page.click("text=Create function")]);
    functionId = new URL(page.url()).pathname.split("/").pop()!;
    expect(await text(page, "h1")).toContain("consolefn");
    expect((await owner.api.json("GET", `/v1/function/${functionId}`, 200)).description).toBe("made in the browser");
  });

  it("shows no empty Timeline or Log, and no Invoke but why, before the first deploy", async () => {
    expect(await page.isVisible("#build-timeline")).toBe(false);
    expect(await page.isVisible("#build-log")).toBe(false);
    expect(await page.isVisible("#invoke-form")).toBe(false);
    expect(await text(page, "#invoke-needs-build")).toContain("deploy a build first");
  });

  it("deploys a zip chosen in the file input and follows the build to SUCCESS", async () => {
    await page.setInputFiles("#zip", zipPath);
    await page.waitForSelector('#deploy[data-done="SUCCESS"]', { timeout: 300_000 });
    expect(await text(page, "#build-timeline")).toMatch(/PENDING[\s\S]*BUILDING[\s\S]*SUCCESS/);
    expect(await text(page, "#build-log")).toContain("artifact ready");
    // Invoke is offered as soon as the build succeeded, without a reload.
    expect(await page.isVisible("#invoke-form")).toBe(true);
    expect(await page.isVisible("#invoke-needs-build")).toBe(false);
  });

  it("invokes the function with a query and a body and shows the response and the log", async () => {
    await page.reload();
    await page.fill("#inv-query", "name=Browser");
    await page.fill("#inv-body", '{"n": 7}');
    await Promise.all([page.waitForLoadState("load"), page.click("button:text('Invoke')")]);
    await page.waitForSelector("#invoke-result", { timeout: 60_000 });
    const result = await text(page, "#invoke-result");
    expect(result).toContain("Response: 200");
    expect(result).toContain("Hello, Browser!");
    expect(result).toContain("greeting Browser");
  });

  it("creates a public endpoint and refuses a bad origin with the API's own message", async () => {
    await page.goto(`${worker.url}/console/functions/${functionId}`);
    await Promise.all([page.waitForURL(/\/console\/endpoints\/[0-9a-z]+/), page.click("text=New public endpoint")]);
    const endpointId = new URL(page.url()).pathname.split("/").pop()!;
    expect(await page.locator("#endpoint-link").getAttribute("href")).toBe(`/gc/${endpointId}`);
    await page.fill("#ep-origin", "http://not-https.example");
    await page.fill("#ep-limit", "5");
    await Promise.all([page.waitForLoadState("load"), page.click("text=Save restrictions")]);
    const shown = await text(page, ".error");
    const res = await owner.api("PATCH", `/v1/endpoint/${endpointId}`, { json: { origin: ["http://not-https.example"] } });
    const apiError = ((await res.json()) as { error: { message: string; details: { message: string }[] } }).error;
    expect(shown).toContain(apiError.message);
    expect(shown).toContain(apiError.details[0]!.message);
    // A good origin is saved.
    await page.fill("#ep-origin", "https://app.example.com");
    await Promise.all([page.waitForURL(/done=/), page.click("text=Save restrictions")]);
    expect((await owner.api.json("GET", `/v1/endpoint/${endpointId}`, 200)).origin).toEqual(["https://app.example.com"]);
  });

  it("creates a trigger and draws it in the graph", async () => {
    await page.goto(`${worker.url}/console/triggers`);
    await page.selectOption("#tr-from", functionId);
    await page.selectOption("#tr-next", functionId);
    await page.check("input[name=includeResult]");
    await Promise.all([page.waitForURL(/done=/), page.click("text=Create trigger")]);
    await expect(page.locator("#trigger-graph g.node").count()).resolves.toBe(1);
    await expect(page.locator("#trigger-graph g.edge text").first().textContent()).resolves.toBe("200 · result");
  });

  it("schedules the function, shows its next runs, sets a payload, tries it and deactivates it", async () => {
    await page.goto(`${worker.url}/console/schedules`);
    await page.selectOption("#sc-fn", functionId);
    await page.fill("#sc-cron", "0 9 * * mon-fri");
    await page.selectOption("#sc-tz", "Europe/London");
    await Promise.all([page.waitForURL(/done=/), page.click("text=Create schedule")]);
    const next = await text(page, ".next-runs");
    expect(next).toMatch(/^(Mon|Tue|Wed|Thu|Fri) \d\d \w{3} 09:00( · (Mon|Tue|Wed|Thu|Fri) \d\d \w{3} 09:00){2}$/);
    const [schedule] = (await owner.api.json("GET", "/v1/scheduled/list", 200)).results;
    expect(schedule).toMatchObject({ functionId, cron: "0 9 * * mon-fri", timezone: "Europe/London", active: true });
    // A bad expression is refused with the API's message.
    await page.fill("#sc-cron", "61 * * * *");
    await Promise.all([page.waitForLoadState("load"), page.click("text=Create schedule")]);
    expect(await text(page, ".error")).toContain("61");
    await page.goto(`${worker.url}/console/schedules`);
    await page.click(`#schedule-${schedule.id} summary`);
    await page.fill(`#pq-${schedule.id}`, "name=Scheduled");
    await Promise.all([page.waitForURL(/done=/), page.click(`#schedule-${schedule.id} button:text('Save payload')`)]);
    expect((await owner.api.json("GET", `/v1/scheduled/${schedule.id}`, 200)).inlinePayload).toMatchObject({ query: "name=Scheduled" });
    await Promise.all([page.waitForURL(/\/console\/tasks\/[0-9a-z]+/), page.click(`#schedule-${schedule.id} button:text('Try now')`)]);
    expect(await text(page, "h1")).toMatch(/^Task [0-9a-z]+$/);
    // The task page names the schedule that started it, linked to its row.
    expect(await text(page, `a[href="/console/schedules#schedule-${schedule.id}"]`)).toBe(schedule.id);
    await page.goto(`${worker.url}/console/schedules`);
    await Promise.all([page.waitForURL(/done=/), page.click(`#schedule-${schedule.id} button:text('Deactivate')`)]);
    expect(await text(page, ".next-runs")).toBe("inactive");
  });

  it("pauses the function", async () => {
    await page.goto(`${worker.url}/console/functions/${functionId}`);
    await Promise.all([page.waitForURL(/done=/), page.click("button:text('Pause')")]);
    expect(await text(page, ".notice")).toContain("Paused");
    expect((await owner.api.json("GET", `/v1/function/${functionId}`, 200)).paused).toBe(true);
  });

  it("refuses a change sent from a page of another origin (CSRF), even with the session cookie", async () => {
    const server = http.createServer((_req, res) => {
      res.setHeader("content-type", "text/html");
      res.end(`<form id="f" method="post" action="${worker.url}/console/functions/${functionId}/delete"><input name="_csrf" value="guess"></form><script>document.getElementById("f").submit()</script>`);
    });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    try {
      const evil = await context.newPage();
      const answer = evil.waitForResponse((r) => r.url().includes("/delete"));
      await evil.goto(`http://127.0.0.1:${(server.address() as { port: number }).port}/`);
      expect((await answer).status()).toBe(403);
      await evil.close();
    } finally {
      server.close();
    }
    expect((await owner.api.json("GET", `/v1/function/${functionId}`, 200)).name).toBe("consolefn");
  });

  it("deletes the function after a confirmation that names what goes with it", async () => {
    await Promise.all([page.waitForURL(/\/delete$/), page.click("text=Delete…")]);
    const confirm = await text(page, ".error");
    expect(confirm).toContain("1 public endpoint(s)");
    expect(confirm).toContain("1 trigger(s)");
    expect(confirm).toContain("1 schedule(s)");
    await Promise.all([page.waitForURL(/\/console\?done=/), page.click("button:text('Delete consolefn')")]);
    expect(await text(page, ".notice")).toBe("Function deleted.");
    expect((await owner.api("GET", `/v1/function/${functionId}`)).status).toBe(404);
  });

  it("signs out", async () => {
    await Promise.all([page.waitForURL(/\/console\/signin/), page.click("text=Sign out")]);
    await page.goto(`${worker.url}/console`);
    expect(new URL(page.url()).pathname).toBe("/console/signin");
    expect(await context.cookies()).toEqual([]);
  });
});

describe("another account in the console", () => {
  it("never sees the first account's records", async () => {
    const fn = await deploy(owner.api, "py", await zipFolder(path.join(ROOT, "examples/python/hello")), "ownersfn");
    const context = await browser.newContext();
    try {
      const page = await signIn(context, stranger.token);
      expect(await page.content()).not.toContain("ownersfn");
      const res = await page.goto(`${worker.url}/console/functions/${fn.functionId}`);
      expect(res?.status()).toBe(404);
      expect(await page.content()).not.toContain("ownersfn");
      const build = await page.goto(`${worker.url}/console/builds/${fn.buildId}`);
      expect(build?.status()).toBe(404);
    } finally {
      await context.close();
    }
  });

  it("cannot sign in with a token the service does not know", async () => {
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto(`${worker.url}/console/signin`);
    await page.fill("#token", "gc_not_a_token");
    await Promise.all([page.waitForLoadState("load"), page.click("button[type=submit]")]);
    expect(await text(page, ".error")).toContain("not a valid access token");
    expect(await context.cookies()).toEqual([]);
    await context.close();
  });
});
