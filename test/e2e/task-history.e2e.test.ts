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
 * Issue 27 on the whole stack, as deployed (TASK_ROWS = "shard"): tasks run by a real agent in
 * Docker are rowless, recorded by their dispatcher shard alone, and D1 never holds a row of them.
 * The archive sweep (fired on the local Worker as if 9 days later: past D1's window and the hold of
 * a quiet account's records) then has nothing of theirs to move, and every read a client makes
 * answers as before it. D1's own move of tasks with rows is the worker suite's
 * (test/worker/task-history.test.ts); the shard's archive, which runs on the shard's own clock, too
 * (test/worker/rowless-tasks.test.ts, shard-archive-reads.test.ts).
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

describe("task records on the whole stack", () => {
  it("stay out of D1, metered and counted, and every read answers them the same after the archive sweep", async () => {
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
    expect(await user.json("GET", "/v1/usage", 200)).toMatchObject({ invocations: 3, pending: 0 });
    const inD1 = () => d1(`select count(*) as n from tasks where id in (${ids.map(() => "?").join(",")})`, ...ids);
    expect(inD1()).toBe(0);

    await worker.triggerCron(ARCHIVE_CRON, Date.now() + 9 * DAY_MS); // past the window (1 day) and the hold for a full chunk (7)
    expect(await reads(fn, ids)).toEqual(before);
    // D1 got no row to move: neither its tasks nor its archive's index hold any of the three.
    expect(inD1()).toBe(0);
    expect(d1("select coalesce(sum(records), 0) as n from task_archive")).toBe(0);
  }, 600_000);
});
