import { env } from "cloudflare:test";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { openDb } from "../../worker/db/client.js";
import { QueryBudget } from "../../worker/db/query-budget.js";
import type { Bindings } from "../../worker/env.js";
import { DAY_MS } from "../../worker/lib/time.js";
import { archiveTasks, type ArchiveRun } from "../../worker/task-history/archiver.js";
import { archiveAfterMs, archiveHoldMs } from "../../worker/task-history/window.js";
import { ARCHIVE_CRON } from "../../worker/crons.js";
import { HOUR_MS } from "../../worker/lib/time.js";
import { callJson, clearQueue, deployedFunction, finishTask, newAccount, newTask, runCron } from "./helpers.js";
import { FakeAgent } from "./fake-agent.js";

/**
 * Issue 27: an account with fewer records than a chunk moves once its oldest has waited the hold (7
 * days) past the window. Many such accounts move together, a chunk each, in one read and one batch,
 * so a run's queries bound the records it moves, not the number of small accounts.
 */

beforeEach(clearQueue);
afterEach(() => FakeAgent.closeAll());

const bindings = env as unknown as Bindings;
/** Past the window and the hold. */
const PAST = Date.now() + 9 * DAY_MS;
const move = (run: ArchiveRun) => archiveTasks(openDb(bindings), env.BUCKET, archiveAfterMs(bindings), PAST, run);
const inD1 = async (accountId: string) => (await env.DB.prepare("select count(*) n from tasks where account_id = ?").bind(accountId).first<number>("n")) ?? 0;
const chunkSizes = async (accountId: string) =>
  (await env.DB.prepare("select records from task_archive where account_id = ? order by last_id").bind(accountId).all<{ records: number }>()).results.map((r) => r.records);

/**
 * New accounts, in the order of their ids (the move reads accounts in that order), each with
 * `counts[i]` finished tasks, issued in turns (one of each account's, then the next of each), so the
 * oldest records hold every account.
 */
async function accounts(counts: number[]) {
  const made = [];
  for (const _ of counts) made.push(await newAccount());
  made.sort((x, y) => (x.accountId < y.accountId ? -1 : 1));
  const out = [];
  for (const a of made) out.push({ ...a, fn: await deployedFunction(a.token), ids: [] as string[] });
  for (let turn = 0; turn < Math.max(...counts); turn++) for (const [i, a] of out.entries()) if (turn < counts[i]!) a.ids.push(await newTask(a.token, a.fn));
  for (const a of out) for (const id of a.ids) await finishTask(id, { body: `r ${id}` });
  return out;
}

describe("the move of accounts past the hold", () => {
  it("moves many small accounts with one look, one read and one batch, a chunk each", async () => {
    const small = await accounts([1, 3, 2, 1, 4, 2]);
    const budget = new QueryBudget(1000);
    expect(await move({ budget })).toBe(13);
    // The look past the hold, the read, the batch; then the look past the window, which finds nothing.
    expect(1000 - budget.left()).toBe(4);
    for (const a of small) {
      expect(await inD1(a.accountId)).toBe(0);
      expect(await chunkSizes(a.accountId)).toEqual([a.ids.length]);
      const list = await callJson<{ id: string }[]>("/v1/task/list", 200, { token: a.token });
      expect(list.map((t) => t.id)).toEqual([...a.ids].reverse());
      expect(await callJson(`/v1/task/${a.ids[0]}`, 200, { token: a.token })).toMatchObject({ id: a.ids[0], status: 200 });
    }
  });

  it("moves the full chunks of an account a read stops inside, then the rest of it on its own, then reads the accounts after it again", async () => {
    const [first, big, last] = await accounts([1, 5, 1]);
    const budget = new QueryBudget(1000);
    // Chunks of 3, one a read: the look's page of 3 holds all three accounts, whose read stops after
    // the first account's record and two of the big one's, short of a chunk of its own.
    expect(await move({ chunkSize: 3, chunksPerRead: 1, budget })).toBe(7);
    expect(await chunkSizes(first!.accountId)).toEqual([1]);
    expect(await chunkSizes(big!.accountId)).toEqual([3, 2]);
    expect(await chunkSizes(last!.accountId)).toEqual([1]);
    // A look; a read and a batch (the first account); the big one's two reads and batches; the last
    // account read again, and its batch; the next look past the hold (nothing left), one past the window.
    expect(1000 - budget.left()).toBe(11);
    for (const a of [first!, big!, last!]) {
      expect(await inD1(a.accountId)).toBe(0);
      const list = await callJson<{ id: string }[]>("/v1/task/list", 200, { token: a.token });
      expect(list.map((t) => t.id)).toEqual([...a.ids].reverse());
    }
  });

  it("stops writing chunks once a run has written its most", async () => {
    const small = await accounts([1, 1, 1]);
    expect(await move({ maxChunks: 2 })).toBe(3); // the read's batch is written whole, then nothing more is read
    const more = await accounts([1, 1]);
    expect(await move({ maxChunks: 1, chunkSize: 1, chunksPerRead: 1 })).toBe(1);
    expect((await Promise.all(more.map((a) => inD1(a.accountId)))).sort()).toEqual([0, 1]);
    expect(await Promise.all(small.map((a) => inD1(a.accountId)))).toEqual([0, 0, 0]);
  });
});

describe("the hold (TASK_ARCHIVE_HOLD_HOURS)", () => {
  it("is 7 days by default, never less than an hour", () => {
    expect(archiveHoldMs({})).toBe(7 * DAY_MS);
    expect(archiveHoldMs({ TASK_ARCHIVE_HOLD_HOURS: "24" })).toBe(DAY_MS);
    expect(archiveHoldMs({ TASK_ARCHIVE_HOLD_HOURS: "0.1" })).toBe(HOUR_MS);
    expect(archiveHoldMs({ TASK_ARCHIVE_HOLD_HOURS: "a week" })).toBe(7 * DAY_MS);
  });

  it("moves a small account's records once its oldest has waited the hold past the window, in the archive sweep", async () => {
    const [small] = await accounts([2]);
    const at = (hours: number) => Date.now() + hours * HOUR_MS;
    // Past the window (an hour) and two more: short of the default hold, past a hold of 2 hours.
    await runCron(ARCHIVE_CRON, at(3.5));
    expect(await inD1(small!.accountId)).toBe(2);
    await runCron(ARCHIVE_CRON, at(3.5), { TASK_ARCHIVE_HOLD_HOURS: "2" });
    expect(await inD1(small!.accountId)).toBe(0);
    expect(await chunkSizes(small!.accountId)).toEqual([2]);
  });
});
