import path from "node:path";
import Docker from "dockerode";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { loadConfig, type AgentConfig } from "../../agent/config.js";
import { LABEL_AGENT, LABEL_ROLE } from "../../agent/docker/client.js";
import { Runner, type InvokeResult, type RunnerOptions } from "../../agent/runner/index.js";
import { LANGS, type Lang } from "../../agent/runtimes/languages.js";
import { ensureEnvironment } from "./helpers/environment.js";
import { buildExample, buildFiles, call, removeTempDirs, tempDir, type Built } from "./helpers/functions.js";
import { LIMIT_PROBES } from "./helpers/pool-probes.js";

const docker = new Docker();
let pooled: Runner;
let plain: Runner;
const hello = {} as Record<Lang, Built>;
const probe = {} as Record<Lang, Built>;
let fnCounter = 0;
const newFunctionId = () => `fn-pool-${Date.now().toString(36)}-${++fnCounter}`;

/** Waits until the runner's pool holds `n` ready containers of `lang`. */
async function poolHas(runner: Runner, lang: Lang, n: number, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while ((runner.pooledContainers()[lang] ?? 0) < n) {
    if (Date.now() > until) throw new Error(`the ${lang} pool did not reach ${n} (has ${runner.pooledContainers()[lang] ?? 0})`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Runs `body` with a runner of its own (agent id `test-pool-<name>`), shut down afterwards. */
async function withRunner(name: string, options: Omit<RunnerOptions, "stateDir" | "agentId">, body: (runner: Runner) => Promise<void>): Promise<void> {
  const runner = await Runner.create({ stateDir: path.join(await tempDir(`state-pool-${name}`), "state"), agentId: `test-pool-${name}`, ...options });
  try {
    await body(runner);
  } finally {
    await runner.shutdown();
  }
}

async function agentContainers(agentId: string, role?: string): Promise<Docker.ContainerInfo[]> {
  const label = [`${LABEL_AGENT}=${agentId}`, ...(role ? [`${LABEL_ROLE}=${role}`] : [])];
  return docker.listContainers({ all: true, filters: { label } });
}

/** The confinement Docker applied to a container: what a pooled container must share with a fresh one. */
async function confinement(id: string) {
  const { HostConfig: h, Config: c } = await docker.getContainer(id).inspect();
  return {
    user: c.User,
    network: h.NetworkMode,
    readOnlyRoot: h.ReadonlyRootfs,
    capDrop: h.CapDrop,
    securityOpt: h.SecurityOpt,
    memory: h.Memory,
    swap: h.MemorySwap,
    nanoCpus: h.NanoCpus,
    pids: h.PidsLimit,
    tmpfs: h.Tmpfs,
    runtime: h.Runtime,
  };
}

async function firstCallFromPool(lang: Lang, built: Built, query: Record<string, string>, caps = {}, functionId = newFunctionId()): Promise<InvokeResult> {
  await poolHas(pooled, lang, 1);
  return pooled.invoke(call(built, lang, { query }, caps, functionId));
}

beforeAll(async () => {
  await ensureEnvironment([...LANGS]);
  const state = await tempDir("state-pool");
  pooled = await Runner.create({ stateDir: path.join(state, "pooled"), agentId: "test-pool", pool: { size: 1, max: 1, idleMs: 60_000, languages: LANGS } });
  plain = await Runner.create({ stateDir: path.join(state, "plain"), agentId: "test-pool-plain" });
  for (const lang of LANGS) {
    hello[lang] = await buildExample(lang, "hello");
    probe[lang] = await buildFiles(lang, LIMIT_PROBES[lang]);
    expect(probe[lang].result.ok, probe[lang].log.join("\n")).toBe(true);
  }
});

// A first call leaves a warm container, and the pool fills only the room the node's cap leaves.
afterEach(async () => {
  for (const c of pooled?.containers() ?? []) await pooled.evictFunction(c.functionId);
});

afterAll(async () => {
  await pooled?.shutdown();
  await plain?.shutdown();
  await removeTempDirs();
});

describe.each(LANGS)("%s: a function's first call from the pool", (lang) => {
  it("answers as a freshly started container does: status, headers, body and log", async () => {
    const request = { method: "POST", query: { name: "Ada" }, headers: { "x-test": "yes" }, body: JSON.stringify({ n: 1 }) };
    const fromPool = await (async () => {
      await poolHas(pooled, lang, 1);
      return pooled.invoke(call(hello[lang], lang, request, {}, newFunctionId()));
    })();
    const fresh = await plain.invoke(call(hello[lang], lang, request, {}, newFunctionId()));
    expect(fromPool.pooled, fromPool.log.join("\n")).toBe(true);
    expect(fromPool.container).toBe("cold");
    expect(fresh.pooled).toBe(false);
    expect(fromPool.status).toBe(fresh.status);
    expect(fromPool.body.toString()).toBe(fresh.body.toString());
    expect(fromPool.headers["x-greeting"]).toBe("Ada");
    expect(fromPool.log).toEqual(fresh.log);
    // The same confinement as a fresh container of that function: same user, no network, read-only
    // root, capabilities, memory, CPUs and pids.
    expect(await confinement(fromPool.containerId)).toEqual(await confinement(fresh.containerId));
  });

  it("gives the handler its function's id and memory size, and the memory limit it asked for", async () => {
    const functionId = newFunctionId();
    const res = await firstCallFromPool(lang, probe[lang], { mode: "env" }, { memSize: 96 }, functionId);
    expect(res.pooled).toBe(true);
    expect(res.status, res.log.join("\n")).toBe(200);
    expect(JSON.parse(res.body.toString())).toEqual({ functionId, memory: 96, env: functionId });
    const { memory, swap } = await confinement(res.containerId);
    expect([memory, swap]).toEqual([96 * 1024 * 1024, 96 * 1024 * 1024]);
  });

  it("times out with 504 and the container is removed", async () => {
    const res = await firstCallFromPool(lang, probe[lang], { mode: "sleep" }, { timeout: 3 });
    expect(res.pooled).toBe(true);
    expect(res.status).toBe(504);
    expect(res.log.at(-1)).toBe("[runtime] timed out after 3 s; the container was killed");
    await expect(docker.getContainer(res.containerId).inspect()).rejects.toMatchObject({ statusCode: 404 });
  });

  it("is killed at the function's memory size, not the pool's: 160 MiB in a 64 MiB function", async () => {
    const res = await firstCallFromPool(lang, probe[lang], { mode: "alloc" }, { memSize: 64 });
    expect(res.pooled).toBe(true);
    expect(res.status, res.log.join("\n")).toBe(500);
    expect(res.log.at(-1)).toBe("[runtime] the function ran out of memory (limit 64 MiB) and was killed");
  });

  it("holds the pids limit: 300 threads or processes do not all start", async () => {
    const res = await firstCallFromPool(lang, probe[lang], { mode: "spawn" }, { timeout: 60 });
    expect(res.pooled).toBe(true);
    // A runtime may die of the refused thread itself (a 500); one that survives counts fewer than 300.
    if (res.status === 200) expect((JSON.parse(res.body.toString()) as { started: number }).started).toBeLessThan(300);
    else expect(res.status, res.log.join("\n")).toBe(500);
    const after = await pooled.invoke(call(hello[lang], lang, { query: { name: "next" } }, {}, newFunctionId()));
    expect(after.status).toBe(200);
  });
});

describe("a handler that fails to load, from the pool", () => {
  const broken: Partial<Record<Lang, { name: string; data: string }>> = {
    py: { name: "handler.py", data: "raise RuntimeError('cannot load: missing setting')\n" },
    js: { name: "handler.js", data: "throw new Error('cannot load: missing setting');\n" },
    rb: { name: "handler.rb", data: "raise 'cannot load: missing setting'\n" },
    // The loader execs the binary, which dies before it connects: read as a runtime that exited.
    go: {
      name: "handler.go",
      data: `package function

import handler "github.com/openfaas/templates-sdk/go-http"

func init() { panic("cannot load: missing setting") }

func Handle(req handler.Request) (handler.Response, error) { return handler.Response{}, nil }
`,
    },
  };
  for (const [lang, file] of Object.entries(broken) as [Lang, { name: string; data: string }][])
    it(`${lang}: answers with the load error, as a fresh start does`, async () => {
      const built = await buildFiles(lang, [file]);
      const fromPool = await firstCallFromPool(lang, built, {});
      const fresh = await plain.invoke(call(built, lang, { query: {} }, {}, newFunctionId()));
      expect(fromPool.pooled).toBe(true);
      expect([fromPool.status, fromPool.body.toString()]).toEqual([fresh.status, fresh.body.toString()]);
      expect(fromPool.status).toBe(500);
      expect(fromPool.log.join("\n")).toContain("cannot load: missing setting");
    });
});

describe("one function per pooled container", () => {
  it("never serves a second function from a container that served one", async () => {
    const a = newFunctionId();
    const first = await firstCallFromPool("py", hello.py, { name: "a" }, {}, a);
    expect(first.pooled).toBe(true);
    const b = await firstCallFromPool("py", hello.py, { name: "b" });
    expect(b.pooled).toBe(true);
    expect(b.containerId).not.toBe(first.containerId);
    // A's container is A's warm container now, and nobody else's.
    const again = await pooled.invoke(call(hello.py, "py", { query: { name: "a" } }, {}, a));
    expect([again.container, again.containerId]).toEqual(["warm", first.containerId]);
    await pooled.evictFunction(a);
    await expect(docker.getContainer(first.containerId).inspect()).rejects.toMatchObject({ statusCode: 404 });
  });

  it("shows a function only its own files: nothing of another function's code anywhere in its container", async () => {
    const secret = `secret-${Date.now().toString(36)}`;
    const owner = await buildFiles("py", [{ name: "handler.py", data: `SECRET = "${secret}"\ndef handle(event, context):\n    return SECRET\n` }]);
    const mine = await firstCallFromPool("py", owner, {});
    expect([mine.pooled, mine.body.toString()]).toEqual([true, secret]);
    const snoop = await buildFiles("py", [
      {
        name: "handler.py",
        data: `import os
def handle(event, context):
    needle = event.query["needle"].encode()
    found = []
    for root, dirs, files in os.walk("/"):
        if root in ("/proc", "/sys", "/dev"):
            dirs[:] = []
            continue
        for name in files:
            try:
                with open(os.path.join(root, name), "rb") as f:
                    if needle in f.read():
                        found.append(os.path.join(root, name))
            except OSError:
                pass
    mounts = [line.split()[4] for line in open("/proc/self/mountinfo")]
    return {"found": found, "function": sorted(os.listdir("/function")), "mounts": mounts}
`,
      },
    ]);
    const res = await firstCallFromPool("py", snoop, { needle: secret });
    expect(res.pooled).toBe(true);
    const seen = JSON.parse(res.body.toString()) as { found: string[]; function: string[]; mounts: string[] };
    expect(seen.found).toEqual([]);
    // Its own artifact (the source and the bytecode its build compiled), nothing else.
    expect(seen.function.filter((name) => name !== "__pycache__")).toEqual(["handler.py"]);
    expect(seen.mounts.filter((m) => m.startsWith("/function"))).toEqual(["/function"]);
  });
});

describe("refill and sizing", () => {
  it("refills behind a first call with a new container", async () => {
    await poolHas(pooled, "js", 1);
    const before = (await agentContainers("test-pool", "pool")).map((c) => c.Id);
    const res = await pooled.invoke(call(hello.js, "js", { query: {} }, {}, newFunctionId()));
    expect(res.pooled).toBe(true);
    expect(before).toContain(res.containerId);
    await poolHas(pooled, "js", 1);
    const after = (await agentContainers("test-pool", "pool")).map((c) => c.Id).filter((id) => !before.includes(id));
    expect(after.length).toBeGreaterThanOrEqual(1);
  });

  it("grows toward recent demand, never above the node's container cap, and shrinks back when idle", async () => {
    await withRunner("grow", { maxContainers: 4, pool: { size: 1, max: 3, idleMs: 8000, languages: ["py"] } }, async (runner) => {
      await poolHas(runner, "py", 1);
      const ids = [newFunctionId(), newFunctionId(), newFunctionId()];
      const results = await Promise.all(ids.map((id) => runner.invoke(call(hello.py, "py", { query: {} }, {}, id))));
      expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
      // Three first calls in the window: the pool aims at three, but three warm containers leave
      // room for one under the cap of four.
      await poolHas(runner, "py", 1);
      expect((await agentContainers("test-pool-grow")).length).toBeLessThanOrEqual(4);
      for (const id of ids) await runner.evictFunction(id);
      await poolHas(runner, "py", 3, 30_000);
      expect((await agentContainers("test-pool-grow")).length).toBeLessThanOrEqual(4);
      // The window passes with no first call: back to the standing size.
      const until = Date.now() + 30_000;
      while ((runner.pooledContainers().py ?? 0) > 1 && Date.now() < until) await new Promise((r) => setTimeout(r, 250));
      expect(runner.pooledContainers().py).toBe(1);
    });
  });

  it("on a full node, one language's growth gives way to another language's standing container", async () => {
    await withRunner("share", { maxContainers: 3, pool: { size: 1, max: 3, idleMs: 60_000, languages: ["py", "js"] } }, async (runner) => {
      await poolHas(runner, "py", 1);
      await poolHas(runner, "js", 1);
      const ids = [newFunctionId(), newFunctionId()];
      for (const id of ids) await runner.invoke(call(hello.py, "py", { query: {} }, {}, id));
      for (const id of ids) await runner.evictFunction(id);
      // Two first calls of py in the window: py grows to two, which fills the node with js's one.
      await poolHas(runner, "py", 2);
      const js = await runner.invoke(call(hello.js, "js", { query: {} }, {}, newFunctionId()));
      expect(js.pooled).toBe(true);
      // js's warm container holds one place: js gets its standing container back from py's growth.
      await poolHas(runner, "js", 1);
      expect(runner.pooledContainers()).toEqual({ py: 1, js: 1 });
      expect((await agentContainers("test-pool-share")).length).toBeLessThanOrEqual(3);
    });
  });

  it("gives its place to a cold start that needs room on a full node", async () => {
    await withRunner("full", { maxContainers: 2, pool: { size: 1, max: 1, idleMs: 60_000, languages: ["py", "js"] } }, async (runner) => {
      await poolHas(runner, "py", 1);
      await poolHas(runner, "js", 1);
      const res = await runner.invoke(call(hello.rb, "rb", { query: {} }, {}, newFunctionId()));
      expect([res.status, res.pooled]).toEqual([200, false]);
      expect((await agentContainers("test-pool-full")).length).toBeLessThanOrEqual(2);
    });
  });
});

describe("under gVisor (runsc has no update)", () => {
  it("serves a function from a container started with its own limits: the defaults at once, others once demand grew them", async () => {
    await withRunner("runsc", { runtime: "runsc", pool: { size: 1, max: 2, idleMs: 60_000, languages: ["py"] } }, async (runner) => {
      await poolHas(runner, "py", 1);
      const atDefaults = await runner.invoke(call(hello.py, "py", { query: {} }, {}, newFunctionId()));
      expect([atDefaults.status, atDefaults.pooled, atDefaults.runtime]).toEqual([200, true, "runsc"]);
      await poolHas(runner, "py", 1);
      // No pooled container has 128 MiB yet: this first call starts one, and counts as demand.
      const first = await runner.invoke(call(hello.py, "py", { query: {} }, { memSize: 128 }, newFunctionId()));
      expect([first.status, first.pooled]).toEqual([200, false]);
      await poolHas(runner, "py", 2);
      const next = await runner.invoke(call(hello.py, "py", { query: {} }, { memSize: 128 }, newFunctionId()));
      expect([next.status, next.pooled]).toEqual([200, true]);
      const { HostConfig } = await docker.getContainer(next.containerId).inspect();
      expect([HostConfig.Memory, HostConfig.Runtime]).toEqual([128 * 1024 * 1024, "runsc"]);
    });
  });
});

describe("shutdown", () => {
  it("leaves no container behind, not even one the pool was starting", async () => {
    const runner = await Runner.create({
      stateDir: path.join(await tempDir("state-pool-stop"), "state"),
      agentId: "test-pool-stop",
      pool: { size: 1, max: 1, idleMs: 60_000, languages: ["py", "js", "rb"] },
    });
    // The pool is filling now; the agent exits right after shutdown resolves.
    await new Promise((r) => setTimeout(r, 200));
    await runner.shutdown();
    expect(await agentContainers("test-pool-stop")).toEqual([]);
  });
});

describe("a node with the pool off", () => {
  it("starts no pooled container and cold-starts as before", async () => {
    expect(plain.pooledContainers()).toEqual({});
    expect(await agentContainers("test-pool-plain", "pool")).toEqual([]);
    const res = await plain.invoke(call(hello.go, "go", { query: {} }, {}, newFunctionId()));
    expect([res.status, res.container, res.pooled]).toEqual([200, "cold", false]);
  });

  it("does not pool privileged functions", async () => {
    await withRunner("priv", { allowPrivileged: true, pool: { size: 1, max: 1, idleMs: 60_000, languages: ["py"] } }, async (runner) => {
      await poolHas(runner, "py", 1);
      const res = await runner.invoke(call(hello.py, "py", { query: {} }, { privileged: true }, newFunctionId()));
      expect([res.status, res.pooled]).toEqual([200, false]);
      expect(runner.pooledContainers().py).toBe(1);
    });
  });
});

describe("--pool-size, --pool-max, --pool-idle, --pool-langs", () => {
  const base = ["--url", "http://127.0.0.1:8787", "--token", `gca_${"0".repeat(64)}`, "--node-id", "n1"];
  const configOf = (args: string[], env: NodeJS.ProcessEnv = {}) => loadConfig([...base, ...args], env) as AgentConfig;

  it("keeps one container per served language by default, growing to four on demand", () => {
    const config = configOf(["--langs", "py,go"]);
    expect([config.poolSize, config.poolMax, config.poolIdleMs, config.poolLangs]).toEqual([1, 4, 120_000, ["py", "go"]]);
  });

  it("takes flags and environment, pools only languages served, and turns off with 0", () => {
    const config = configOf(["--langs", "py,go", "--pool-langs", "go,rb", "--pool-max", "8"], { GCFAAS_POOL_SIZE: "0", GCFAAS_POOL_IDLE_MS: "5000" });
    expect([config.poolSize, config.poolMax, config.poolIdleMs, config.poolLangs]).toEqual([0, 8, 5000, ["go"]]);
  });

  it("refuses a negative size and an unknown language, naming the setting", () => {
    expect(() => configOf([], { GCFAAS_POOL_SIZE: "-1" })).toThrow(/poolSize/);
    expect(() => configOf(["--pool-langs", "py,cobol"])).toThrow(/poolLangs/);
  });
});
