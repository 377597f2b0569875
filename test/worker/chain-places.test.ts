import { env } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { shardStub } from "../../worker/dispatch/client.js";
import { MAX_CHAIN_TASKS } from "../../worker/chains/limits.js";
import { openDb } from "../../worker/db/client.js";
import type { Bindings } from "../../worker/env.js";
import { newId } from "../../worker/lib/ids.js";
import { DAY_MS } from "../../worker/lib/time.js";
import { archiveTasks } from "../../worker/task-history/archiver.js";
import { archiveAfterMs } from "../../worker/task-history/window.js";
import { newAccount, sql } from "./helpers.js";

// A chain's places are kept at the shard its root's id names (worker/chains/places.ts); these tests
// ask that shard directly, as firings on every shard do.
const shard = () => shardStub(env, 0);
const ids = (chain: string, n: number, from = 0) => Array.from({ length: n }, (_, i) => `${chain}-t${from + i}`);
let chains = 0;
const newChain = () => `chain-${Date.now()}-${chains++}`;

describe("reserveChainPlaces", () => {
  it("starts a chain its root fires at zero, and gives at most MAX_CHAIN_TASKS places, in order", async () => {
    const chain = newChain();
    const wanted = ids(chain, MAX_CHAIN_TASKS + 7);
    expect(await shard().reserveChainPlaces(chain, wanted, true)).toEqual(wanted.slice(0, MAX_CHAIN_TASKS));
    expect(await shard().reserveChainPlaces(chain, ids(chain, 3, 500), false)).toEqual([]);
  });

  it("gives a firing run again the places it had, and takes no new one", async () => {
    const chain = newChain();
    const first = ids(chain, MAX_CHAIN_TASKS - 1);
    await shard().reserveChainPlaces(chain, first, true);
    expect(await shard().reserveChainPlaces(chain, first.slice(0, 5), false)).toEqual(first.slice(0, 5));
    // Exactly one place is left, whatever the earlier firings asked again.
    expect(await shard().reserveChainPlaces(chain, ids(chain, 2, 900), false)).toEqual([`${chain}-t900`]);
  });

  it("counts a deeper chain it does not know from D1's rows of that chain, once", async () => {
    const { accountId } = await newAccount();
    const chain = newChain();
    const recorded = MAX_CHAIN_TASKS - 4;
    await sql(
      `with recursive k(i) as (select 1 union all select i + 1 from k where i < ?)
       insert into tasks (id, account_id, function_id, lang, issued_at, timeout, cpu_count, mem_size, privileged, chain_id, finished_at)
       select ? || '-old-' || i, ?, 'fn-x', 'py', 0, 30, 1, 256, 0, ?, 1 from k`,
      recorded, chain, accountId, chain,
    );
    expect(await shard().reserveChainPlaces(chain, ids(chain, 10), false)).toEqual(ids(chain, 4));
    // Read once: more rows in D1 later (these very tasks, flushed) do not count them twice.
    await sql("update tasks set chain_id = ? where chain_id is null and account_id = ?", chain, accountId);
    expect(await shard().reserveChainPlaces(chain, ids(chain, 4), false)).toEqual(ids(chain, 4));
  });

  it("counts the tasks of a chain it does not know that the archive has taken from D1", async () => {
    const { accountId } = await newAccount();
    const chain = newChain();
    // Twenty days old: past the archive's window (8 days) and its hold for a full chunk (7).
    const old = Date.now() - 20 * DAY_MS;
    const rows = Array.from({ length: MAX_CHAIN_TASKS - 4 }, (_, i) => newId(old + i));
    await sql(
      `insert into tasks (id, account_id, function_id, lang, issued_at, timeout, cpu_count, mem_size, privileged, chain_id, finished_at)
       select value, ?, 'fn-x', 'py', ?, 30, 1, 256, 0, ?, ? from json_each(?)`,
      accountId, old, chain, old + 1000, JSON.stringify(rows),
    );
    // One more of the account's tasks, outside the chain: it moves too and is not counted.
    await sql(`insert into tasks (id, account_id, function_id, lang, issued_at, timeout, cpu_count, mem_size, privileged, finished_at) values (?, ?, 'fn-x', 'py', ?, 30, 1, 256, 0, ?)`, newId(old), accountId, old, old + 1000);
    const bindings = env as unknown as Bindings;
    expect(await archiveTasks(openDb(bindings), env.BUCKET, archiveAfterMs(bindings), Date.now())).toBe(MAX_CHAIN_TASKS - 3);
    expect((await sql("select count(*) as n from tasks where account_id = ?", accountId)).results).toEqual([{ n: 0 }]);
    expect(await shard().reserveChainPlaces(chain, ids(chain, 10), false)).toEqual(ids(chain, 4));
  });

  it("never gives concurrent firings of one chain more places than it has, together", async () => {
    const chain = newChain();
    const asks = Array.from({ length: 5 }, (_, k) => shard().reserveChainPlaces(chain, ids(chain, 30, k * 100), k === 0));
    const granted = (await Promise.all(asks)).flat();
    expect(granted).toHaveLength(MAX_CHAIN_TASKS);
    expect(new Set(granted).size).toBe(MAX_CHAIN_TASKS);
  });

  it("keeps chains apart", async () => {
    const [one, two] = [newChain(), newChain()];
    await shard().reserveChainPlaces(one, ids(one, MAX_CHAIN_TASKS), true);
    expect(await shard().reserveChainPlaces(two, ids(two, 3), true)).toEqual(ids(two, 3));
  });
});

describe("releaseChainPlaces", () => {
  it("frees the places of tasks their function refused, for the chain's next firing", async () => {
    const chain = newChain();
    const all = ids(chain, MAX_CHAIN_TASKS);
    await shard().reserveChainPlaces(chain, all, true);
    await shard().releaseChainPlaces(chain, all.slice(0, 2));
    expect(await shard().reserveChainPlaces(chain, ids(chain, 3, 300), false)).toEqual(ids(chain, 2, 300));
  });
});
