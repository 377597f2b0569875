import fs from "node:fs/promises";
import http from "node:http";
import path from "node:path";
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Runner } from "../../agent/runner/index.js";
import { ensureEnvironment } from "./helpers/environment.js";
import { buildFiles, call, removeTempDirs, tempDir, type Built } from "./helpers/functions.js";

/**
 * What a hostile function tries from inside its container, under gVisor (runsc) and under runc:
 * each probe must fail. The function reports what each attempt gave; the host side checks.
 */
const PROBE = `import json, os, socket
def attempt(f):
    try:
        return {"ok": True, "value": f()}
    except BaseException as e:
        return {"ok": False, "error": type(e).__name__}

def connect(addr, family=socket.AF_INET):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(2)
    s.connect(addr)
    return "connected"

def processes():
    out = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    out.append(f.read().replace(b"\\0", b" ").decode(errors="replace"))
            except OSError:
                pass
    return out

def handle(event, context):
    marker = event.query["marker"]
    port = int(event.query["port"])
    return {
        "hostFile": attempt(lambda: open(marker).read()),
        "hostFileViaProc": attempt(lambda: open("/proc/1/root" + marker).read()),
        "dockerSocket": attempt(lambda: connect("/var/run/docker.sock", socket.AF_UNIX)),
        "loopback": attempt(lambda: connect(("127.0.0.1", port))),
        "setuid": attempt(lambda: os.setuid(0)),
        "chroot": attempt(lambda: os.chroot("/")),
        "euid": os.geteuid(),
        "processes": processes(),
    }
`;

let marker: string;
let server: http.Server;
let port: number;
let fn: Built;
const runners: Record<string, Runner> = {};

beforeAll(async () => {
  await ensureEnvironment(["py"]);
  const dir = await tempDir("probes");
  marker = path.join("/tmp", `gcfaas-host-secret-${randomBytes(6).toString("hex")}`);
  await fs.writeFile(marker, "the host's secret");
  server = http.createServer((_req, res) => res.end("host service"));
  await new Promise<void>((r) => server.listen(0, "0.0.0.0", r));
  port = (server.address() as { port: number }).port;
  fn = await buildFiles("py", [{ name: "handler.py", data: PROBE }]);
  expect(fn.result.ok, fn.log.join("\n")).toBe(true);
  for (const runtime of ["runsc", "runc"]) runners[runtime] = await Runner.create({ stateDir: path.join(dir, runtime), agentId: `test-probes-${runtime}`, runtime: runtime === "runsc" ? "runsc" : "" });
}, 600_000);

afterAll(async () => {
  for (const r of Object.values(runners)) await r.shutdown();
  server?.close();
  await fs.rm(marker, { force: true });
  await removeTempDirs();
});

for (const runtime of ["runsc", "runc"])
  describe(`probes from inside a function under ${runtime}`, () => {
    it("cannot read the host's files, reach the Docker socket or the network, raise privileges, or see other processes", async () => {
      const res = await runners[runtime]!.invoke(call(fn, "py", { query: { marker, port: String(port) } }));
      expect(res.status, res.log.join("\n")).toBe(200);
      expect(res.runtime).toBe(runtime);
      const r = JSON.parse(res.body.toString());
      expect(r.hostFile.ok).toBe(false);
      expect(r.hostFileViaProc.ok).toBe(false);
      expect(r.dockerSocket.ok).toBe(false);
      expect(r.loopback.ok).toBe(false);
      expect(r.setuid.ok).toBe(false);
      expect(r.chroot.ok).toBe(false);
      expect(r.euid).not.toBe(0);
      // Only the container's own processes: its init and the shim (and nothing of the host's).
      const procs: string[] = r.processes;
      expect(procs.length).toBeLessThanOrEqual(4);
      expect(procs.join("\n")).not.toMatch(/vitest|dockerd|containerd|node /);
      expect(procs.join("\n")).toContain("shim.py");
    });
  });
