import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { commandLine, descendants } from "../support/process-tree.js";
import { AgentProcess, api, LocalWorker } from "./harness.js";

// Every user of a host reads every process's command line (ps, /proc/<pid>/cmdline); only the
// owner reads its environment. The processes the start command and this harness start — the
// Worker's server, wrangler, workerd, the agent and whatever they run — must carry no token there.
const ADMIN = `secret_admin_${process.pid}_${"a".repeat(24)}`;
const NODE_ID = "argv-check";

let worker: LocalWorker;
let agent: AgentProcess;
let agentToken: string;

beforeAll(async () => {
  worker = await LocalWorker.create({ adminToken: ADMIN });
  agentToken = await worker.agentToken(NODE_ID);
  agent = await AgentProcess.start(worker, agentToken, NODE_ID, ["--langs", "py", "--metrics", "0"]);
}, 300_000);

afterAll(async () => {
  await agent?.stop();
  await worker?.dispose();
});

describe("the processes of a local service", () => {
  it("carry neither the admin token nor the agent token on their command lines, and the agent still connects", async () => {
    const pids = descendants(process.pid);
    const lines = pids.map((pid) => ({ pid, cmd: commandLine(pid) })).filter((p) => p.cmd);
    // The check must have seen the real processes: the Worker's server, workerd and the agent.
    expect(lines.some((p) => p.cmd.includes("serve-worker.ts"))).toBe(true);
    expect(lines.some((p) => /workerd/.test(p.cmd))).toBe(true);
    expect(lines.some((p) => p.cmd.includes("agent/main.ts") && p.pid === agent.child!.pid)).toBe(true);
    for (const { pid, cmd } of lines) {
      expect(cmd, `process ${pid}`).not.toContain(ADMIN);
      expect(cmd, `process ${pid}`).not.toContain(agentToken);
      expect(cmd, `process ${pid}`).not.toMatch(/gca_[0-9a-f]{64}/);
    }
    // The tokens did reach them: the admin token works, and the agent is connected with its own.
    const nodes = await api(worker.url, ADMIN).json<{ id: string; connected: boolean }[]>("GET", "/v1/admin/nodes", 200);
    expect(nodes.find((n) => n.id === NODE_ID)).toMatchObject({ connected: true });
    expect(agent.log).toMatch(/connected to dispatcher/);
  });
});
