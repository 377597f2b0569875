import { readdirSync } from "node:fs";
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureOfflineImages } from "../../agent/runtimes/images.js";
import { ARCHIVE_CRON } from "../../worker/crons.js";
import { zipItems } from "../support/zip.js";
import { localStack, type AgentProcess, type Api, type LocalWorker } from "./harness.js";
import { deploy, invoke } from "./deploy.js";

/**
 * Issue 27 on the whole stack: tasks run by a real agent in Docker, their records moved to the R2
 * archive by the hourly sweep (fired on the local Worker as if 16 days later: past the 8-day window, and the 7 days a quiet account's records wait for a full chunk),
 * and every read a client makes answers as it did while the records were in D1.
 */
let worker: LocalWorker;
let agent: AgentProcess;
let user: Api;

const DAY_MS = 86_400_000;
/** Answers its input back; `big` pads the answer past 4 KiB, so that result lives in R2 rather than inline. */
const handler = `def handle(event, context):\n    print("got", event.json)\n    return {"received": event.json, "pad": "x" * (8000 if event.json.get("big") else 1)}\n`;

beforeAll(async () => {
  await ensureOfflineImages(["py"]);
  ({ worker, agent, user } = await localStack({ account: "history", nodeId: "history-agent", agentArgs: ["--slots", "2"], testScheduled: true }));
}, 1_800_000);

afterAll(async () => {
  await agent?.stop();
  await worker?.dispose();
});

/** A count from the local Worker's D1 database file (read-only, beside the running Worker). */
function d1(query: string, ...binds: string[]): number {
  const dir = path.join(worker.stateDir, "v3", "d1", "miniflare-D1DatabaseObject");
  const file = readdirSync(dir).find((f) => f.endsWith(".sqlite") && f !== "metadata.sqlite");
  const db = new DatabaseSync(path.join(dir, file!), { readOnly: true });
  try {
    return Number((db.prepare(query).get(...binds) as { n: number }).n);
  } finally {
    db.close();
  }
}

/** What a client reads of these tasks: each task, its result and log, and every page of the lists. */
async function reads(fn: string, ids: string[]) {
  const out: Record<string, unknown> = {};
  for (const id of ids) {
    const res = await user("GET", `/v1/task/${id}/result`);
    out[id] = {
      task: await user.json("GET", `/v1/task/${id}`, 200),
      result: { status: res.status, type: res.headers.get("content-type"), body: await res.text() },
      log: await user.json("GET", `/v1/task/${id}/log`, 200),
    };
  }
  const pages: unknown[] = [];
  for (let before = ""; ; ) {
    const page = await user.json<{ id: string }[]>("GET", `/v1/task/list?functionId=${fn}&limit=2${before ? `&before=${before}` : ""}`, 200);
    if (!page.length) break;
    pages.push(page);
    before = page.at(-1)!.id;
  }
  out.pages = pages;
  out.list = await user.json("GET", "/v1/task/list", 200);
  out.completed = (await user.json("GET", `/v1/function/${fn}`, 200)).metrics.completedTasks;
  return out;
}

describe("the archive sweep on the whole stack", () => {
  it("moves finished records to R2 and every read answers them as before", async () => {
    const { functionId: fn, build } = await deploy(user, "py", await zipItems([{ name: "handler.py", data: handler }]), "history");
    expect(build.status).toBe("SUCCESS");
    const ids: string[] = [];
    for (const input of [{ n: 1 }, { n: 2, big: true }, { n: 3 }]) {
      const { id, res } = await invoke(user, fn, { json: input });
      expect(res.status).toBe(200);
      ids.push(id);
    }
    const before = await reads(fn, ids);
    expect(before.completed).toBe(3);

    await worker.triggerCron(ARCHIVE_CRON, Date.now() + 9 * DAY_MS); // past the window (1 day) and the hold for a full chunk (7)
    expect(await reads(fn, ids)).toEqual(before);
    // Moved, not copied: D1 holds none of the rows any more, the archive's index holds all three.
    expect(d1(`select count(*) as n from tasks where id in (${ids.map(() => "?").join(",")})`, ...ids)).toBe(0);
    expect(d1("select coalesce(sum(records), 0) as n from task_archive")).toBe(3);
  }, 600_000);
});
