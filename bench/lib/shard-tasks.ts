/**
 * The tasks the shard benchmarks run (bench/shard-history.ts, bench/shard-archive.ts): a small JSON
 * function's, its payloads a few dozen bytes each (as bench/task-history.ts), over 50 accounts and
 * 200 functions; and a shard's SQLite as they open it.
 */
import path from "node:path";
import { DatabaseSync } from "node:sqlite";
import type { TaskRow } from "../../worker/db/rows.js";
import type { Outcome } from "../../worker/dispatch/outcomes.js";
import { newId } from "../../worker/lib/ids.js";

export const accounts = Array.from({ length: 50 }, () => newId());
export const functions = Array.from({ length: 200 }, () => newId());

/** A task of the benchmark: the payloads of a small JSON function, a few dozen bytes each (as bench/task-history.ts). */
export function taskOf(i: number, now: number): { row: TaskRow; outcome: Outcome } {
  const issuedAt = now - 40;
  const row: TaskRow = {
    id: newId(issuedAt), accountId: accounts[i % accounts.length]!, functionId: functions[i % functions.length]!, lang: "py", buildId: newId(issuedAt - 86_400_000),
    endpointId: i % 3 ? null : newId(issuedAt - 86_400_000), triggerId: null, parentTaskId: null, chainId: null, hop: 0, issuedAt, assignedAt: null,
    finishedAt: null, progress: 0, status: 0, node: null, timeout: 30, cpuCount: 0.5, memSize: 256, privileged: false, egress: "none",
    networkLatency: 0, runtime: null, input: JSON.stringify({ method: "POST", query: {}, body: JSON.stringify({ n: i }) }), inputKey: null,
    resultStatus: null, resultHeaders: null, resultBody: null, resultKey: null, log: null, logKey: null, durationMs: null, attempts: 0, purgedAt: null, scheduledId: null,
  };
  const outcome: Outcome = { taskId: row.id, accountId: row.accountId, functionId: row.functionId, at: now, node: "node-1", assignedAt: now - 30, rttMs: 1, report: null };
  return { row, outcome };
}

export const finishedRow = (row: TaskRow, o: Outcome): TaskRow => ({
  ...row, assignedAt: o.assignedAt, finishedAt: o.at, progress: 100, status: 200, node: o.node, networkLatency: 1, runtime: "runsc",
  resultStatus: 200, resultHeaders: { "content-type": "application/json" }, resultBody: JSON.stringify({ ok: true, n: row.id.slice(-6) }),
  log: ["started", "done"], durationMs: 12, attempts: 1,
});

export function shardDb(dir: string, name: string) {
  const db = new DatabaseSync(path.join(dir, `${name}.sqlite`));
  // The statements' own cost: a Durable Object's storage makes writes durable its own way, not by a local fsync each.
  db.exec("pragma journal_mode = wal");
  db.exec("pragma synchronous = off");
  return db;
}


/** A shard's `transactionSync` over the bench's connection: begin, the work, commit. */
export const transactionOver =
  (db: DatabaseSync) =>
  <T>(fn: () => T): T => {
    db.exec("begin");
    const out = fn();
    db.exec("commit");
    return out;
  };
