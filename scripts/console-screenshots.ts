/**
 * Regenerates the screenshots in docs/console/ (shown in docs/console.md): starts the Worker and an
 * agent locally, fills an account with a little of everything, and photographs each console page
 * in headless Chromium, on a desktop and at 375 px. Also prints each page's weight over the wire.
 *
 *   node --import tsx scripts/console-screenshots.ts
 */
import fs from "node:fs/promises";
import path from "node:path";
import { ensureOfflineImages } from "../agent/runtimes/images.js";
import { ADMIN_TOKEN, AgentProcess, LocalWorker, ROOT } from "./lib/local-service.js";
import { launchBrowser } from "../test/support/browser.js";
import { zipFolder } from "../test/support/zip.js";

const OUT = path.join(ROOT, "docs/console");

async function main() {
  await ensureOfflineImages(["py"]);
  const worker = await LocalWorker.create();
  const post = async (p: string, token: string, json?: unknown, extra: RequestInit = {}) => {
    const res = await fetch(`${worker.url}${p}`, { method: "POST", headers: { authorization: `Bearer ${token}`, ...(json !== undefined ? { "content-type": "application/json" } : {}) }, body: json !== undefined ? JSON.stringify(json) : null, ...extra });
    const text = await res.text();
    if (!res.ok) throw new Error(`${p}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  const { token } = await post("/v1/admin/accounts", ADMIN_TOKEN, { name: "screenshots" });
  const agentToken = await worker.agentToken("screenshots-agent");
  const agent = await AgentProcess.start(worker, agentToken, "screenshots-agent", ["--slots", "2", "--langs", "py"]);
  const browser = await launchBrowser();
  try {
    const tag = (await post("/v1/tag", token, { name: "prod", color: "#1a7f37" })).id;
    await post("/v1/tag", token, { name: "beta", color: "#8250df" });
    const fn = (await post("/v1/function", token, { name: "hello", description: "greets its callers", lang: "PY", type: "DOCKER", tag: [tag] })).id;
    const next = (await post("/v1/function", token, { name: "audit", description: "records every greeting", lang: "PY", type: "DOCKER" })).id;
    const zip = await zipFolder(path.join(ROOT, "examples/python/hello"));
    for (const f of [fn, next]) {
      const { id: build } = await post(`/v1/build/${f}?arch=amd64`, token, undefined, { body: zip, headers: { authorization: `Bearer ${token}`, "content-type": "application/octet-stream" } });
      for (;;) {
        const b = (await (await fetch(`${worker.url}/v1/build/${build}`, { headers: { authorization: `Bearer ${token}` } })).json()) as { status: string };
        if (b.status === "SUCCESS" || b.status === "FAILED") break;
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    await post("/v1/trigger", token, { functionId: fn, nextId: next, status: 200, includeResult: true });
    await post("/v1/scheduled", token, { functionId: next, cron: "0 9 * * mon-fri", timezone: "Europe/London", description: "weekday digest" });
    const ep = (await post(`/v1/endpoint/${fn}`, token, { dailyLimit: 1000, origin: ["https://app.example.com"], timeLimit: { from: "08:00", to: "20:00", timezone: "Europe/Paris" } })).id;
    let task = "";
    for (let i = 0; i < 5; i++) await fetch(`${worker.url}/v1/task/${fn}?name=Ada`, { method: "POST", headers: { authorization: `Bearer ${token}`, "content-type": "application/json", prefer: "wait=30" }, body: JSON.stringify({ n: i }) }).then((r) => r.arrayBuffer());
    const list = (await (await fetch(`${worker.url}/v1/task/list?functionId=${fn}&limit=1`, { headers: { authorization: `Bearer ${token}` } })).json()) as { id: string }[];
    task = list[0]!.id;

    await fs.mkdir(OUT, { recursive: true });
    const pages: [string, string][] = [
      ["functions", "/console"], ["function", `/console/functions/${fn}`], ["builds", "/console/builds"], ["tasks", "/console/tasks"],
      ["task", `/console/tasks/${task}`], ["endpoints", "/console/endpoints"], ["endpoint", `/console/endpoints/${ep}`],
      ["triggers", "/console/triggers"], ["schedules", "/console/schedules"], ["usage", "/console/usage"], ["tags", "/console/tags"],
    ];
    for (const [viewport, size] of [["desktop", { width: 1280, height: 900 }], ["mobile", { width: 375, height: 812 }]] as const) {
      const context = await browser.newContext({ viewport: size });
      const page = await context.newPage();
      await page.goto(`${worker.url}/console/signin`);
      if (viewport === "desktop") await page.screenshot({ path: path.join(OUT, "signin.png") });
      await page.fill("#token", token);
      await Promise.all([page.waitForURL(`${worker.url}/console`), page.click("button[type=submit]")]);
      for (const [name, p] of viewport === "desktop" ? pages : pages.slice(0, 2)) {
        let bytes = 0;
        const count = (r: import("playwright-core").Response) => r.body().then((b) => (bytes += b.length + 300), () => undefined);
        page.on("response", count);
        await page.goto(`${worker.url}${p}`, { waitUntil: "networkidle" });
        page.off("response", count);
        await page.screenshot({ path: path.join(OUT, `${name}${viewport === "mobile" ? "-375" : ""}.png`), fullPage: viewport === "desktop" });
        if (viewport === "desktop") console.log(`${name.padEnd(10)} ${(bytes / 1024).toFixed(1)} KB (document, script and headers)`);
      }
      await context.close();
    }
  } finally {
    await browser.close();
    await agent.stop();
    await worker.dispose();
  }
}

await main();
