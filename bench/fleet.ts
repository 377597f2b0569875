/**
 * Fleet benchmark: hundreds of simulated agents (bench/fleet-agent.ts, the real protocol over
 * WebSockets, no Docker) against the local Worker, once per dispatcher shard count. Prints tasks/s,
 * assignment latency, how evenly tasks spread over agents, and checks that every task finished
 * exactly once (its record read back through the API) and no agent ever held more than its slots.
 * --faults drops a tenth of the agents' connections and restarts the Worker during the run.
 * --url drives a Worker already running (a deployment; bench/target.ts): --shards is then the one
 * shard count it was deployed with (its DISPATCH_SHARDS), and --faults cannot restart it.
 *
 * Run: npx tsx bench/fleet.ts [--agents 200] [--slots 8] [--tasks 50000] [--shards 1,2,4] [--delay 20]
 *        [--functions 32] [--clients 64] [--faults] [--url https://… with GCFAAS_ADMIN_TOKEN]
 */
import { setTimeout as sleep } from "node:timers/promises";
import { parseArgs } from "node:util";
import { LocalWorker, api, type Api } from "../test/e2e/harness.js";
import { FleetAgent } from "./fleet-agent.js";
import { ms, percentile, printTable, treeCpuMs } from "./stats.js";
import { benchWorker, type BenchWorker } from "./target.js";

const { values } = parseArgs({
  options: {
    agents: { type: "string", default: "200" },
    slots: { type: "string", default: "8" },
    tasks: { type: "string", default: "50000" },
    shards: { type: "string", default: "1,2,4" },
    delay: { type: "string", default: "20" },
    // Dispatch is sharded by function: tasks of one function all land on one shard.
    functions: { type: "string", default: "32" },
    clients: { type: "string", default: "64" },
    faults: { type: "boolean", default: false },
    url: { type: "string" },
  },
});
if (values.url && values.shards!.includes(",")) throw new Error("with --url, --shards is the one count the Worker was deployed with");
const AGENTS = Number(values.agents);
const SLOTS = Number(values.slots);
const TASKS = Number(values.tasks);
const DELAY = Number(values.delay);
const FUNCTIONS = Number(values.functions);
const CLIENTS = Number(values.clients);

interface RunResult {
  shards: number;
  rate: number;
  assignLat: number[];
  perAgent: number[];
  overSlots: number;
  reassigned: number;
  wrong: string[];
  /** CPU per task of the Worker's process tree (workerd) and of this process (the clients and agents). */
  workerCpuMs: number;
  benchCpuMs: number;
}

/** Retries through a Worker restart: a request that got no answer is tried again. */
async function retrying<T>(fn: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await fn();
    } catch (e) {
      if (i > 600) throw e;
      await sleep(250);
    }
  }
}

async function functionsWithBuilds(user: Api): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < FUNCTIONS; i++) {
    const { id } = await user.json("POST", "/v1/function", 201, { json: { name: `fleet${i}`, lang: "PY", type: "DOCKER" } });
    const build = await user.json("POST", `/v1/build/${id}?arch=amd64`, 201, { body: Buffer.from("PK\x05\x06" + "\0".repeat(18), "binary"), headers: { "content-type": "application/octet-stream" } });
    for (;;) {
      const b = await user.json("GET", `/v1/build/${build.id}`, 200);
      if (b.status === "SUCCESS") break;
      if (b.status === "FAILED") throw new Error(`build of ${id} failed: ${b.log.join("\n")}`);
      await sleep(100);
    }
    ids.push(id);
  }
  return ids;
}

async function run(shards: number): Promise<RunResult> {
  process.env.GCFAAS_DISPATCH_SHARDS = String(shards);
  const worker = await benchWorker(values.url);
  const agents: FleetAgent[] = [];
  try {
    const admin = api(worker.url, worker.adminToken);
    const user = api(worker.url, (await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "fleet" } })).token);
    const assignedAt = new Map<string, number>();
    const assignments = new Map<string, number>();
    const observer = {
      assigned(taskId: string) {
        if (!assignedAt.has(taskId)) assignedAt.set(taskId, performance.now());
        assignments.set(taskId, (assignments.get(taskId) ?? 0) + 1);
      },
    };
    const wsBase = worker.url.replace(/^http/, "ws");
    for (let i = 0; i < AGENTS; i++) {
      const nodeId = `sim-${String(i).padStart(4, "0")}`;
      agents.push(new FleetAgent(nodeId, await worker.agentToken(nodeId), wsBase, worker.url, SLOTS, shards, DELAY, observer));
    }
    await Promise.all(agents.map((a) => a.start()));
    const fns = await functionsWithBuilds(user);

    const createdAt = new Map<string, number>();
    let next = 0;
    const started = performance.now();
    const pid = worker.child?.pid; // none for a Worker at --url: its CPU is not on this machine
    const cpu0 = pid ? treeCpuMs(pid) : NaN;
    const own0 = process.cpuUsage();
    const faults = values.faults ? faultPlan(agents, worker) : undefined;
    await Promise.all(
      Array.from({ length: CLIENTS }, async () => {
        for (let i = next++; i < TASKS; i = next++) {
          await faults?.at(i / TASKS);
          const t0 = performance.now();
          const { id } = await retrying(() => user.json("POST", `/v1/task/${fns[i % fns.length]}`, 201, { json: { i } }));
          createdAt.set(id, t0);
        }
      }),
    );
    await faults?.at(1);
    // Done when every created task has reached an agent and every agent's reports are settled.
    while ([...createdAt.keys()].some((id) => !assignedAt.has(id)) || agents.some((a) => a.busy())) await sleep(50);
    const elapsed = (performance.now() - started) / 1000;
    // A restart starts a new tree, whose count says nothing of the old one's: not shown then.
    const workerCpuMs = values.faults || !pid ? NaN : (treeCpuMs(pid) - cpu0) / createdAt.size;
    const own = process.cpuUsage(own0);
    const benchCpuMs = (own.user + own.system) / 1000 / createdAt.size;

    const wrong = await verify(user, [...createdAt.keys()]);
    const perAgent = agents.map((a) => a.tasksDone);
    return {
      shards,
      rate: createdAt.size / elapsed,
      assignLat: [...createdAt].map(([id, t0]) => assignedAt.get(id)! - t0),
      perAgent,
      overSlots: agents.filter((a) => a.peak > a.slots).length,
      reassigned: [...assignments.values()].filter((n) => n > 1).length,
      wrong,
      workerCpuMs,
      benchCpuMs,
    };
  } finally {
    for (const a of agents) a.stop();
    await worker.dispose();
  }
}

/** A tenth of the agents lose their connections at 30% of the tasks; the Worker restarts at 60%. */
function faultPlan(agents: FleetAgent[], worker: BenchWorker) {
  let dropped = false;
  let restart: Promise<void> | undefined;
  return {
    async at(progress: number) {
      if (!dropped && progress >= 0.3) {
        dropped = true;
        for (const a of agents.filter((_, i) => i % 10 === 0)) a.drop();
        console.log(`dropped ${Math.ceil(agents.length / 10)} agents' connections`);
      }
      if (!restart && progress >= 0.6) {
        const local = worker instanceof LocalWorker ? worker : undefined;
        console.log(local ? "restarting the Worker" : "a Worker at --url is not restarted");
        restart = local ? local.restart().then(() => console.log("Worker back")) : Promise.resolve();
      }
      await restart;
    },
  };
}

/** Every task's record says it finished once, with the body of the agent it names. */
async function verify(user: Api, ids: string[]): Promise<string[]> {
  const wrong: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      for (let i = next++; i < ids.length; i = next++) {
        const id = ids[i]!;
        const rec = await user.json("GET", `/v1/task/${id}`, 200);
        const res = await user("GET", `/v1/task/${id}/result`);
        const body = await res.text();
        if (rec.status !== 200 || rec.progress !== 100 || res.status !== 200 || body !== `${id} by ${rec.node}`) wrong.push(`${id}: record ${rec.status}/${rec.progress} by ${rec.node}, result ${res.status} ${body.slice(0, 80)}`);
      }
    }),
  );
  return wrong;
}

function stddev(xs: number[]): number {
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  return Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length);
}

function report(results: RunResult[]): void {
  const base = results[0]!.rate;
  printTable(
    "Fleet",
    ["shards", "tasks/s", "vs first", "assign p50", "assign p95", "tasks/agent min/max", "stddev", "over slots", "re-assigned", "wrong records", "Worker CPU/task", "bench CPU/task"],
    results.map((r) => [
      r.shards, r.rate.toFixed(0), `${(r.rate / base).toFixed(2)}×`, ms(percentile(r.assignLat, 50)), ms(percentile(r.assignLat, 95)),
      `${Math.min(...r.perAgent)}/${Math.max(...r.perAgent)}`, stddev(r.perAgent).toFixed(1), r.overSlots, r.reassigned, r.wrong.length, ms(r.workerCpuMs), ms(r.benchCpuMs),
    ]),
  );
}

async function main() {
  const results: RunResult[] = [];
  for (const shards of values.shards!.split(",").map(Number)) {
    console.log(`${shards} shard(s): ${AGENTS} agents × ${SLOTS} slots, ${TASKS} tasks over ${FUNCTIONS} functions, ${CLIENTS} clients, ${DELAY} ms per task${values.faults ? ", with faults" : ""}`);
    results.push(await run(shards));
    report(results); // after each count: a long series keeps what it measured if cut short
  }
  for (const w of results.flatMap((r) => r.wrong.slice(0, 5))) console.error(w);
  if (results.some((r) => r.wrong.length || r.overSlots)) process.exit(1);
}

await main();
