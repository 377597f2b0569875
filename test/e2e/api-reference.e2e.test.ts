import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { launchBrowser } from "../support/browser.js";
import { ADMIN_TOKEN, api, LocalWorker } from "./harness.js";

// The API reference at /docs: Swagger UI served as Workers static assets by the local Worker
// (the dry-run bundle with wrangler.toml's [assets]), in Debian's Chromium.

let worker: LocalWorker;
let browser: Browser;
let token: string;
let operations: { method: string; path: string; operationId: string; tag: string }[];

beforeAll(async () => {
  worker = await LocalWorker.create();
  ({ token } = await api(worker.url, ADMIN_TOKEN).json("POST", "/v1/admin/accounts", 201, { json: { name: "reader" } }));
  const doc = (await (await fetch(`${worker.url}/v1/openapi.json`)).json()) as { paths: Record<string, Record<string, { operationId: string; tags: string[] }>> };
  operations = Object.entries(doc.paths).flatMap(([path, item]) => Object.entries(item).map(([method, op]) => ({ method, path, operationId: op.operationId, tag: op.tags[0]! })));
  browser = await launchBrowser();
}, 600_000);

afterAll(async () => {
  await browser?.close();
  await worker?.dispose();
});

/** A page that records every request it makes and every error it logs. */
async function openReference(): Promise<{ page: Page; requests: string[]; errors: string[] }> {
  const page = await browser.newPage();
  const requests: string[] = [];
  const errors: string[] = [];
  page.on("request", (r) => requests.push(r.url()));
  page.on("console", (m) => m.type() === "error" && errors.push(m.text()));
  page.on("pageerror", (e) => errors.push(String(e)));
  const res = await page.goto(`${worker.url}/docs`);
  expect(res?.status()).toBe(200);
  await page.waitForSelector(".opblock", { timeout: 60_000 });
  return { page, requests, errors };
}

describe("GET /docs", () => {
  it("renders every operation of /v1/openapi.json, loading nothing from another origin", async () => {
    const { page, requests, errors } = await openReference();
    expect(page.url()).toBe(`${worker.url}/docs/`);
    expect(await page.locator(".opblock").count()).toBe(operations.length);
    for (const op of operations) expect(await page.locator(`#operations-${op.tag}-${op.operationId}`).count(), `${op.method} ${op.path}`).toBe(1);
    expect(requests).toContain(`${worker.url}/v1/openapi.json`);
    expect(requests.filter((u) => !u.startsWith(`${worker.url}/`))).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("tries an operation against this service with the token given under Authorize", async () => {
    const { page, errors } = await openReference();
    await page.click(".btn.authorize");
    const account = page.locator(".auth-container").filter({ hasText: "account" }).first();
    await account.locator("input").fill(token);
    await account.locator("button.authorize").click();
    await page.click(".btn-done");

    const op = page.locator("#operations-functions-listFunctions");
    await op.locator(".opblock-summary").click();
    await op.locator(".try-out__btn").click();
    const [response] = await Promise.all([page.waitForResponse((r) => r.url().startsWith(`${worker.url}/v1/function/list`)), op.locator(".execute").click()]);
    expect(response.status()).toBe(200);
    expect(response.request().headers().authorization).toBe(`Bearer ${token}`);
    await expect.poll(() => op.locator(".live-responses-table tr.response .response-col_status").first().textContent()).toBe("200");
    expect(JSON.parse((await op.locator(".live-responses-table tr.response .microlight").first().textContent()) ?? "")).toEqual([]);
    expect(errors).toEqual([]);
    await page.close();
  });

  it("leaves the API, the public endpoints and the console to the Worker", async () => {
    // Every answer of the Worker carries its request id (hono's requestId middleware); an asset's does not.
    const fromWorker = async (path: string) => {
      const res = await fetch(`${worker.url}${path}`, { redirect: "manual" });
      await res.body?.cancel();
      return res.headers.has("x-request-id");
    };
    for (const path of ["/v1/openapi.json", "/v1/function/list", "/healthz", "/gc/nosuchendpoint", "/console", "/console/signin", "/docs/nosuchpage", "/"])
      expect(await fromWorker(path), path).toBe(true);
    for (const path of ["/docs/", "/docs/init.js", "/docs/swagger-ui-bundle.js"]) expect(await fromWorker(path), path).toBe(false);
  });
});
