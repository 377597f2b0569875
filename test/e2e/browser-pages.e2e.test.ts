import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { launchBrowser } from "../support/browser.js";
import { zipSources } from "../support/zip.js";
import { ADMIN_TOKEN, AgentProcess, api, LocalWorker, type Api } from "./harness.js";
import { deploy } from "./deploy.js";

/** A 2×1 PNG (one red, one blue pixel), returned by the function as its response body. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAIAAAB7QOjdAAAAEElEQVR4nGP4z8DAwMDAAAAO/wH/Hm9a6QAAAABJRU5ErkJggg==",
  "base64",
);

let worker: LocalWorker;
let user: Api;
let agent: AgentProcess;
let browser: Browser;
let endpoint: string;

beforeAll(async () => {
  await ensureOfflineImages(["py"]);
  worker = await LocalWorker.create();
  const admin = api(worker.url, ADMIN_TOKEN);
  user = api(worker.url, (await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "browser" } })).token);
  const agentToken = await worker.agentToken("browser-agent");
  agent = await AgentProcess.start(worker, agentToken, "browser-agent", ["--slots", "2", "--langs", "py"]);
  // The function takes a few seconds, so the browser meets the pending page before the image.
  const fn = await deploy(
    user,
    "py",
    await zipSources({
      "handler.py": [
        "import base64, time",
        `PNG = base64.b64decode("${PNG.toString("base64")}")`,
        "def handle(event, context):",
        "    time.sleep(3)",
        '    return {"statusCode": 200, "headers": {"Content-Type": "image/png"}, "body": PNG}',
        "",
      ].join("\n"),
    }),
    "image",
  );
  expect(fn.build.status, fn.build.log.join("\n")).toBe("SUCCESS");
  ({ id: endpoint } = await user.json("POST", `/v1/endpoint/${fn.functionId}`, 201, { json: {} }));
  browser = await launchBrowser();
}, 1_800_000);

afterAll(async () => {
  await browser?.close();
  await agent?.stop();
  await worker?.dispose();
});

describe("a public link opened in a browser", () => {
  it("shows the call page with the result link, then a self-refreshing page until the function's image shows", async () => {
    const page = await browser.newPage();
    const call = await page.goto(`${worker.url}/gc/${endpoint}`);
    expect(call?.status()).toBe(201);
    expect(call?.headers()["content-type"]).toMatch(/^text\/html/);
    await expect(page.locator("h1").textContent()).resolves.toBe("The function is queued");
    const link = page.locator("#result-link");
    const href = await link.getAttribute("href");
    expect(href).toMatch(/^\/gc\/[0-9a-z]+\/result$/);

    const first = await Promise.all([page.waitForNavigation(), link.click()]);
    expect(first[0]?.status()).toBe(404);
    expect(first[0]?.headers()["retry-after"]).toBe("1");
    expect(await page.locator("#task-status").textContent()).toMatch(/^(pending|running)$/);

    // The meta refresh reloads the page until the result replaces it: the image itself.
    // Functions, not strings: the pages' CSP forbids eval. They are serialized and run in the page
    // (so they name nothing of this file), whose DOM types this Node project does not load.
    type Doc = { contentType: string; querySelector(s: string): { naturalWidth: number; naturalHeight: number } | null };
    await page.waitForFunction(() => (globalThis as unknown as { document: Doc }).document.contentType === "image/png", undefined, { timeout: 60_000, polling: 200 });
    const size = await page.evaluate(() => {
      const img = (globalThis as unknown as { document: Doc }).document.querySelector("img");
      return img ? { w: img.naturalWidth, h: img.naturalHeight } : null;
    });
    expect(size).toEqual({ w: 2, h: 1 });
    await page.close();
  });

  it("a refresh of the call page is one more call", async () => {
    const before = (await user.json("GET", `/v1/endpoint/${endpoint}/metrics`, 200)).todayTasks;
    const page = await browser.newPage();
    await page.goto(`${worker.url}/gc/${endpoint}`);
    await page.reload();
    expect((await user.json("GET", `/v1/endpoint/${endpoint}/metrics`, 200)).todayTasks).toBe(before + 2);
    await page.close();
  });

  it("clients that do not ask for HTML still get JSON: fetch from a page, and curl's */*", async () => {
    const page = await browser.newPage();
    await page.goto(`${worker.url}/healthz`);
    const answer = await page.evaluate(async (url) => {
      const res = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: "{}" });
      return { status: res.status, body: await res.json() };
    }, `${worker.url}/gc/${endpoint}`);
    expect(answer.status).toBe(201);
    expect(answer.body).toEqual({ id: expect.stringMatching(/^[0-9a-z]+$/) });
    const res = await fetch(`${worker.url}/gc/${endpoint}`, { headers: { accept: "*/*" } });
    expect(res.status).toBe(201);
    expect(await res.json()).toEqual({ id: expect.any(String) });
    await page.close();
  });
});
