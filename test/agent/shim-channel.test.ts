import fs from "node:fs/promises";
import path from "node:path";
import Docker from "dockerode";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Runner } from "../../agent/runner/index.js";
import { ensureEnvironment } from "./helpers/environment.js";
import { buildFiles, call, removeTempDirs, tempDir, type Built } from "./helpers/functions.js";

// Issue 17, finding 1: a function must not be able to redirect the runner's channel to its shim
// (for example to another tenant's warm container), nor learn host paths from error messages.
const docker = new Docker();

async function python(source: string): Promise<Built> {
  const built = await buildFiles("py", [{ name: "handler.py", data: source }]);
  if (!built.result.ok) throw new Error(built.log.join("\n"));
  return built;
}

const VICTIM = "def handle(event, context):\n    return 'victim secret 42'\n";

// Replaces the runner's channel in its own container with a link to the same place in the victim's
// container (what worked when the runner connected to a socket by path), and reports what the
// kernel said to each step.
const ATTACKER = [
  "import errno, os, socket",
  "",
  "def attempt(step):",
  "    try:",
  "        step()",
  "        return 'done'",
  "    except OSError as err:",
  "        return errno.errorcode.get(err.errno, str(err.errno))",
  "",
  "def connect(path):",
  "    s = socket.socket(socket.AF_UNIX)",
  "    s.settimeout(1)",
  "    s.connect(path)",
  "    s.close()",
  "",
  "def handle(event, context):",
  "    if 'victim' not in event.query:",
  "        return 'attacker'",
  "    mine = os.environ['GCFAAS_SOCKET']",
  "    target = '/proc/{}/root{}'.format(event.query['victim'], mine)",
  "    folder = os.path.dirname(mine)",
  "    return {",
  "        'chmod': attempt(lambda: os.chmod(folder, 0o777)),",
  "        'rename': attempt(lambda: os.rename(mine, mine + '.old')),",
  "        'unlink': attempt(lambda: os.unlink(mine)),",
  "        'symlink': attempt(lambda: os.symlink(target, mine)),",
  "        'reachVictim': attempt(lambda: connect(target)),",
  "    }",
  "",
].join("\n");

let runner: Runner;
let stateDir: string;
let victim: Built;
let attacker: Built;

beforeAll(async () => {
  await ensureEnvironment(["py"]);
  stateDir = path.join(await tempDir("state-channel"), "state");
  runner = await Runner.create({ stateDir, agentId: "test-channel", allowPrivileged: true });
  victim = await python(VICTIM);
  attacker = await python(ATTACKER);
});

afterAll(async () => {
  await runner?.shutdown();
  await removeTempDirs();
});

async function warmVictimPid(): Promise<number> {
  const res = await runner.invoke(call(victim, "py", {}, {}, "victim"));
  expect(res.body.toString()).toBe("victim secret 42");
  return (await docker.getContainer(res.containerId).inspect()).State.Pid;
}

describe("shim channel: redirecting to another tenant's container", () => {
  for (const privileged of [false, true]) {
    it(`fails for a${privileged ? " privileged (root)" : "n unprivileged"} function: its later calls reach only itself`, async () => {
      const pid = await warmVictimPid();
      const caps = { privileged };
      const first = await runner.invoke(call(attacker, "py", {}, caps, `attacker-${privileged}`));
      expect(first.body.toString()).toBe("attacker");

      const plant = await runner.invoke(call(attacker, "py", { query: { victim: String(pid) } }, caps, `attacker-${privileged}`));
      expect(plant.status, plant.log.join("\n")).toBe(200);
      expect(plant.container).toBe("warm");
      const steps = JSON.parse(plant.body.toString()) as Record<string, string>;
      // The channel's folder is read-only in the container; the victim's is not even visible.
      expect(steps).toEqual({ chmod: "EROFS", rename: "EROFS", unlink: "EROFS", symlink: "EEXIST", reachVictim: "ENOENT" });

      for (let i = 0; i < 3; i++) {
        const next = await runner.invoke(call(attacker, "py", {}, caps, `attacker-${privileged}`));
        expect(next.containerId).toBe(plant.containerId);
        expect(next.body.toString()).toBe("attacker");
        expect(next.body.toString()).not.toContain("victim");
      }
      // The victim still answers its own calls, from the same warm container.
      const again = await runner.invoke(call(victim, "py", {}, {}, "victim"));
      expect(again.container).toBe("warm");
      expect(again.body.toString()).toBe("victim secret 42");
    });
  }

  it("keeps the channel's host folder root-owned, holding only the runner's socket", async () => {
    await runner.invoke(call(attacker, "py", {}, {}, "attacker-false"));
    const sockets = path.join(stateDir, "sockets");
    const folders = await fs.readdir(sockets);
    expect(folders.length).toBeGreaterThan(0);
    for (const folder of folders) {
      const info = await fs.lstat(path.join(sockets, folder));
      expect([info.uid, info.mode & 0o777]).toEqual([0, 0o755]);
      expect(await fs.readdir(path.join(sockets, folder))).toEqual(["agent.sock"]);
    }
  });
});

describe("shim channel: writable space", () => {
  it("is only size-limited tmpfs (/tmp, /dev/shm): the channel, the function and the root are read-only", async () => {
    const built = await python(
      [
        "import errno, os",
        "",
        "def write(path, size):",
        "    try:",
        "        with open(path, 'wb') as f:",
        "            f.write(b'x' * size)",
        "        return 'written'",
        "    except OSError as err:",
        "        return errno.errorcode.get(err.errno, str(err.errno))",
        "",
        "def handle(event, context):",
        "    return {'channel': write('/run/gcfaas/file', 1), 'function': write('/function/file', 1),",
        "            'root': write('/file', 1), 'tmpSmall': write('/tmp/small', 1024),",
        "            'tmpHuge': write('/tmp/huge', 100 * 1024 * 1024), 'shmHuge': write('/dev/shm/huge', 100 * 1024 * 1024)}",
        "",
      ].join("\n"),
    );
    const res = await runner.invoke(call(built, "py", {}));
    expect(JSON.parse(res.body.toString())).toEqual({ channel: "EROFS", function: "EROFS", root: "EROFS", tmpSmall: "written", tmpHuge: "ENOSPC", shmHuge: "ENOSPC" });
  });
});

describe("shim channel: errors the tenant sees", () => {
  it("answer a generic 500 when the shim drops the call, naming no host path or errno", async () => {
    // The handler closes its own shim's connection to the runner, so the call gets no answer.
    const built = await python(
      [
        "import gc, socket",
        "",
        "def handle(event, context):",
        "    for obj in gc.get_objects():",
        "        if isinstance(obj, socket.socket) and obj.family == socket.AF_UNIX and obj.fileno() != -1:",
        "            obj.shutdown(socket.SHUT_RDWR)",
        "    return 'unreachable'",
        "",
      ].join("\n"),
    );
    const res = await runner.invoke(call(built, "py", {}));
    expect(res.status).toBe(500);
    expect(JSON.parse(res.body.toString())).toEqual({ error: "the function runtime failed to answer" });
    const seen = [res.body.toString(), ...res.log].join("\n");
    expect(seen).not.toContain(stateDir);
    expect(seen).not.toMatch(/ECONN|EPIPE|ENOENT|hang up/);
  });
});
