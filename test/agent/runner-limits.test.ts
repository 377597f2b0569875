import path from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Runner } from "../../agent/runner/index.js";
import { ensureEnvironment } from "./helpers/environment.js";
import { buildFiles, call, removeTempDirs, tempDir, type Built } from "./helpers/functions.js";

// Behaviour of the runner itself, shown with small Python functions (they build in well under a second).
const docker = new Docker();

async function containerExists(id: string): Promise<boolean> {
  try {
    await docker.getContainer(id).inspect();
    return true;
  } catch {
    return false;
  }
}

async function python(source: string): Promise<Built> {
  const built = await buildFiles("py", [{ name: "handler.py", data: source }]);
  if (!built.result.ok) throw new Error(built.log.join("\n"));
  return built;
}

let runner: Runner;
let stateDir: string;

beforeAll(async () => {
  await ensureEnvironment(["py"]);
  stateDir = path.join(await tempDir("state-limits"), "state");
  runner = await Runner.create({ stateDir, agentId: "test-limits", pidsLimit: 64 });
});

afterAll(async () => {
  await runner?.shutdown();
  await removeTempDirs();
});

describe("timeout", () => {
  it("answers 504 and removes the container of a function that runs past its timeout", async () => {
    const built = await python("import time\n\ndef handle(event, context):\n    print('going to sleep')\n    time.sleep(60)\n");
    const res = await runner.invoke(call(built, "py", {}, { timeout: 2 }));
    expect(res.status).toBe(504);
    expect(res.durationMs).toBeLessThan(6000);
    expect(res.log).toContain("going to sleep");
    expect(res.log.at(-1)).toMatch(/timed out after 2 s/);
    expect(await containerExists(res.containerId)).toBe(false);
    expect(runner.containers().some((c) => c.id === res.containerId)).toBe(false);
  });
});

describe("cancellation", () => {
  it("stops a running call at once when its signal aborts: 410, and the container is gone", async () => {
    const built = await python("import time\n\ndef handle(event, context):\n    print('started')\n    time.sleep(60)\n");
    const abort = new AbortController();
    const pending = runner.invoke({ ...call(built, "py", {}, { timeout: 60 }), signal: abort.signal });
    // Cancel once the function is surely running (its container is busy).
    while (!runner.containers().some((c) => c.functionId === `fn-${built.buildId}` && c.busy)) await new Promise((r) => setTimeout(r, 50));
    await new Promise((r) => setTimeout(r, 300));
    abort.abort();
    const res = await pending;
    expect(res.status).toBe(410);
    expect(res.durationMs).toBeLessThan(20_000);
    expect(res.log.at(-1)).toMatch(/cancelled; the container was killed/);
    expect(await containerExists(res.containerId)).toBe(false);
    expect(runner.containers().some((c) => c.id === res.containerId)).toBe(false);
  });

  it("does not start a call whose signal aborted already", async () => {
    const built = await python("def handle(event, context):\n    return 'never'\n");
    const abort = new AbortController();
    abort.abort();
    const res = await runner.invoke({ ...call(built, "py", {}), signal: abort.signal });
    expect(res.status).toBe(410);
    expect(runner.containers().some((c) => c.functionId === `fn-${built.buildId}`)).toBe(false);
  });
});

describe("memory limit", () => {
  it("kills a function that allocates past memSize and answers 500", async () => {
    const built = await python("def handle(event, context):\n    hog = bytearray(400 * 1024 * 1024)\n    return len(hog)\n");
    const res = await runner.invoke(call(built, "py", {}, { memSize: 64 }));
    expect(res.status).toBe(500);
    expect(res.log.join("\n")).toMatch(/ran out of memory \(limit 64 MiB\)/);
    expect(await containerExists(res.containerId)).toBe(false);
  });

  it("lets the same allocation succeed under a larger memSize", async () => {
    const built = await python("def handle(event, context):\n    hog = bytearray(40 * 1024 * 1024)\n    return len(hog)\n");
    const res = await runner.invoke(call(built, "py", {}, { memSize: 128 }));
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe(String(40 * 1024 * 1024));
  });
});

describe("fork bomb", () => {
  it("is held by the pids limit: the call ends and the node keeps serving", async () => {
    const source = [
      "import os, time",
      "",
      "def handle(event, context):",
      "    children = 0",
      "    for _ in range(10000):",
      "        try:",
      "            if os.fork() == 0:",
      "                time.sleep(30)",
      "                os._exit(0)",
      "            children += 1",
      "        except OSError as err:",
      "            return {'statusCode': 200, 'body': {'children': children, 'error': str(err)}}",
      "    return {'statusCode': 200, 'body': {'children': children, 'error': None}}",
      "",
    ].join("\n");
    const built = await python(source);
    const res = await runner.invoke(call(built, "py", {}, { timeout: 10 }));
    expect(res.status, res.log.join("\n")).toBe(200);
    const body = JSON.parse(res.body.toString()) as { children: number; error: string | null };
    expect(body.error).toMatch(/Resource temporarily unavailable/);
    expect(body.children).toBeLessThan(64);
    const info = await docker.getContainer(res.containerId).inspect();
    expect(info.HostConfig.PidsLimit).toBe(64);
    const hello = await python("def handle(event, context):\n    return 'still fine'\n");
    expect((await runner.invoke(call(hello, "py", {}))).body.toString()).toBe("still fine");
  });
});

describe("output that never ends a line (issue 17, finding 9)", () => {
  it("cuts a 100 MiB line printed after a marker's start: the call answers, the log is bounded, the container stays warm", async () => {
    const source = [
      "import sys",
      "",
      "def handle(event, context):",
      "    if event.query.get('flood'):",
      "        sys.stdout.write('\\x1eGCFAAS_END:')",
      "        chunk = 'z' * (1024 * 1024)",
      "        for _ in range(100):",
      "            sys.stdout.write(chunk)",
      "        sys.stdout.flush()",
      "    else:",
      "        print('next line')",
      "    return 'done'",
      "",
    ].join("\n");
    const built = await python(source);
    const res = await runner.invoke(call(built, "py", { query: { flood: "1" } }, { timeout: 120 }));
    expect(res.status).toBe(200);
    expect(res.body.toString()).toBe("done");
    expect(res.log).toHaveLength(1);
    expect(res.log[0]).toMatch(/^\x1eGCFAAS_END:z+ \[line cut: \d+ more characters\]$/);
    expect(res.log[0]!.length).toBeLessThanOrEqual(8192);
    const next = await runner.invoke(call(built, "py", {}, { timeout: 120 }));
    expect(next.container).toBe("warm");
    expect(next.log).toEqual(["next line"]);
  });
});

describe("warm containers", () => {
  it("serves a second call of the same build from the same warm container", async () => {
    const built = await python("import os\n\ndef handle(event, context):\n    return os.getpid()\n");
    const first = await runner.invoke(call(built, "py", {}));
    const second = await runner.invoke(call(built, "py", {}));
    expect(first.container).toBe("cold");
    expect(second.container).toBe("warm");
    expect(second.containerId).toBe(first.containerId);
    expect(second.body.toString()).toBe(first.body.toString());
    expect(second.durationMs).toBeLessThan(first.durationMs);
  });

  it("serves concurrent calls of one function from separate containers, one call each", async () => {
    const built = await python("import time\n\ndef handle(event, context):\n    time.sleep(1)\n    return 'done'\n");
    const [a, b] = await Promise.all([runner.invoke(call(built, "py", {})), runner.invoke(call(built, "py", {}))]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(a.containerId).not.toBe(b.containerId);
    const third = await runner.invoke(call(built, "py", {}));
    expect(third.container).toBe("warm");
    expect([a.containerId, b.containerId]).toContain(third.containerId);
  });

  it("keeps each call's log apart (stdout and stderr; their relative order is best effort)", async () => {
    const built = await python("def handle(event, context):\n    print('call', event.query['n'])\n    import sys\n    print('err', event.query['n'], file=sys.stderr)\n    return 'ok'\n");
    const a = await runner.invoke(call(built, "py", { query: { n: "1" } }));
    const b = await runner.invoke(call(built, "py", { query: { n: "2" } }));
    expect([...a.log].sort()).toEqual(["call 1", "err 1"]);
    expect([...b.log].sort()).toEqual(["call 2", "err 2"]);
  });

  it("removes idle containers after the idle timeout and respects the per-node cap", async () => {
    const small = await Runner.create({ stateDir: path.join(stateDir, "small"), agentId: "test-cap", maxContainers: 1, idleTimeoutMs: 1500 });
    try {
      const one = await python("def handle(event, context):\n    return 'one'\n");
      const two = await python("def handle(event, context):\n    return 'two'\n");
      const a = await small.invoke(call(one, "py", {}));
      const b = await small.invoke(call(two, "py", {}));
      // The cap of one forced out the idle container of the first function.
      expect(small.containers().map((c) => c.id)).toEqual([b.containerId]);
      expect(await containerExists(a.containerId)).toBe(false);
      await new Promise((r) => setTimeout(r, 2500));
      expect(small.containers()).toEqual([]);
      expect(await containerExists(b.containerId)).toBe(false);
    } finally {
      await small.shutdown();
    }
  });
});

describe("confinement", () => {
  it("runs as a non-root user with no capabilities, no network, a read-only root and no host files", async () => {
    const source = [
      "import os, socket",
      "",
      "def handle(event, context):",
      "    status = dict(line.split(':\\t', 1) for line in open('/proc/self/status').read().splitlines() if ':\\t' in line)",
      "    try:",
      "        open('/etc/gcfaas-probe', 'w')",
      "        rootfs = 'writable'",
      "    except OSError:",
      "        rootfs = 'read-only'",
      "    open('/tmp/probe', 'w').write('x')",
      "    try:",
      "        socket.create_connection(('1.1.1.1', 53), timeout=1)",
      "        network = 'reachable'",
      "    except OSError:",
      "        network = 'none'",
      "    return {'uid': os.getuid(), 'capEff': status['CapEff'].strip(), 'noNewPrivs': status['NoNewPrivs'].strip(),",
      "            'rootfs': rootfs, 'network': network, 'dockerSock': os.path.exists('/var/run/docker.sock'),",
      "            'functionWritable': os.access('/function', os.W_OK)}",
      "",
    ].join("\n");
    const built = await python(source);
    const res = await runner.invoke(call(built, "py", {}));
    expect(JSON.parse(res.body.toString())).toEqual({
      uid: 10001,
      capEff: "0000000000000000",
      noNewPrivs: "1",
      rootfs: "read-only",
      network: "none",
      dockerSock: false,
      functionWritable: false,
    });
    const info = await docker.getContainer(res.containerId).inspect();
    expect(info.HostConfig.Binds).toHaveLength(2);
    expect(info.HostConfig.Binds?.some((b) => b.endsWith(":/function:ro"))).toBe(true);
  });

  it("refuses a privileged function on a node that does not allow them", async () => {
    const built = await python("def handle(event, context):\n    return 1\n");
    await expect(runner.invoke(call(built, "py", {}, { privileged: true }))).rejects.toThrow(/privileged/);
  });
});

describe("privileged functions", () => {
  it("run as root with Docker's default capabilities on a node that allows them, still without network", async () => {
    const privileged = await Runner.create({ stateDir: path.join(stateDir, "privileged"), agentId: "test-privileged", allowPrivileged: true });
    try {
      const source = [
        "import os",
        "",
        "def handle(event, context):",
        "    status = dict(line.split(':\\t', 1) for line in open('/proc/self/status').read().splitlines() if ':\\t' in line)",
        "    return {'uid': os.getuid(), 'capEff': status['CapEff'].strip(), 'interfaces': sorted(os.listdir('/sys/class/net'))}",
        "",
      ].join("\n");
      const built = await python(source);
      const res = await privileged.invoke(call(built, "py", {}, { privileged: true }));
      const body = JSON.parse(res.body.toString()) as { uid: number; capEff: string; interfaces: string[] };
      expect(body.uid).toBe(0);
      expect(body.capEff).not.toBe("0000000000000000");
      expect(body.interfaces).toEqual(["lo"]);
      const info = await docker.getContainer(res.containerId).inspect();
      expect(info.HostConfig.Privileged).toBe(false);
    } finally {
      await privileged.shutdown();
    }
  });
});

describe("restart cleanup", () => {
  it("removes the containers a previous runner with the same agent id left behind", async () => {
    const dir = path.join(stateDir, "restart");
    const first = await Runner.create({ stateDir: dir, agentId: "test-restart" });
    const built = await python("def handle(event, context):\n    return 1\n");
    const res = await first.invoke(call(built, "py", {}));
    expect(await containerExists(res.containerId)).toBe(true);
    // No shutdown: the process "crashed". A new runner for the same agent cleans up.
    const second = await Runner.create({ stateDir: dir, agentId: "test-restart" });
    expect(await containerExists(res.containerId)).toBe(false);
    await second.shutdown();
  });
});
