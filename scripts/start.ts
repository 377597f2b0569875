/**
 * `npm run dev`: the whole service on this machine. Builds missing runtime images, starts the
 * Worker on local workerd (scripts/lib/serve-worker.ts) with state in .state/ (kept across restarts), creates a development
 * account once, starts one agent, prints the URL and token, and stops everything on Ctrl-C.
 */
import { randomBytes } from "node:crypto";
import fs from "node:fs/promises";
import path from "node:path";
import { LANGS, parseLang } from "../agent/runtimes/languages.js";
import { assertDockerRunning, ensureOfflineImages } from "../agent/runtimes/images.js";
import { AgentProcess, LocalWorker, ROOT } from "./lib/local-service.js";
import { d1DelayFrom } from "./lib/d1-delay.js";

const STATE = path.resolve(process.env.GCFAAS_STATE_DIR ?? path.join(ROOT, ".state"));
const DEV_FILE = path.join(STATE, "dev.json");
const PORT = Number(process.env.GCFAAS_PORT ?? 8787);
/** GCFAAS_LANGS=py,js limits the images built (and the languages the local agent serves). */
const LANGS_SERVED = process.env.GCFAAS_LANGS ? process.env.GCFAAS_LANGS.split(",").map((l) => parseLang(l.trim())) : [...LANGS];

interface DevState {
  adminToken: string;
  accountId?: string;
  token?: string;
  agentToken?: string;
}

/** The one local agent's node id, which its token is bound to. */
const AGENT_NODE = "local-agent";

const say = (line: string) => console.log(`[start] ${line}`);

async function readState(): Promise<DevState> {
  try {
    return JSON.parse(await fs.readFile(DEV_FILE, "utf8")) as DevState;
  } catch {
    return { adminToken: `dev_admin_${randomBytes(16).toString("hex")}` };
  }
}

async function send(method: "POST" | "PATCH", url: string, token: string, body: unknown): Promise<Record<string, string>> {
  const res = await fetch(url, { method, headers: { authorization: `Bearer ${token}`, "content-type": "application/json" }, body: JSON.stringify(body) });
  if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
  return res.status === 204 ? {} : ((await res.json()) as Record<string, string>);
}

/** The dev account and agent token are created once and reused while they still work. */
async function ensureCredentials(worker: LocalWorker, state: DevState): Promise<Required<DevState>> {
  const works = state.token && (await fetch(`${worker.url}/v1/function/list`, { headers: { authorization: `Bearer ${state.token}` } })).status === 200;
  if (!works) {
    const acct = await send("POST", `${worker.url}/v1/admin/accounts`, state.adminToken, { name: "dev" });
    state.accountId = acct.accountId;
    state.token = acct.token;
    say("created the development account");
  }
  // The development account may make functions privileged and let them reach the network (operator
  // grants; accounts lack both by default).
  await send("PATCH", `${worker.url}/v1/admin/accounts/${state.accountId}`, state.adminToken, { privileged: true, egress: true });
  // A token from before tokens were bound to a node answers 401 here, and is replaced.
  const agentConfig = state.agentToken ? await fetch(`${worker.url}/v1/agent/config`, { headers: { authorization: `Bearer ${state.agentToken}` } }) : undefined;
  const agentWorks = agentConfig?.status === 200 && ((await agentConfig.json()) as { nodeId?: string }).nodeId === AGENT_NODE;
  if (!agentWorks) state.agentToken = await worker.agentToken(AGENT_NODE);
  await fs.writeFile(DEV_FILE, JSON.stringify(state, null, 2), { mode: 0o600 });
  return state as Required<DevState>;
}

async function main() {
  // Checked before anything starts: a bad value is a clear error, not a Worker that fails each request.
  const d1DelayMs = d1DelayFrom(process.env.GCFAAS_D1_DELAY_MS);
  await fs.mkdir(path.join(STATE, "logs"), { recursive: true });
  await assertDockerRunning();
  say("checking runtime images (missing ones are built offline from Debian packages)");
  await ensureOfflineImages(LANGS_SERVED, (line) => say(line));
  const state = await readState();
  say(`starting the Worker (local workerd) on port ${PORT}${d1DelayMs ? `, every D1 round trip delayed ${d1DelayMs} ms (GCFAAS_D1_DELAY_MS)` : ""}`);
  const worker = await LocalWorker.create({ stateDir: path.join(STATE, "wrangler"), port: PORT, adminToken: state.adminToken, logFile: path.join(STATE, "logs/worker.log"), d1DelayMs, crons: true });
  const creds = await ensureCredentials(worker, state);
  say("starting one agent");
  const agent = await AgentProcess.start(worker, creds.agentToken, AGENT_NODE, ["--state-dir", path.join(STATE, "agent"), "--langs", LANGS_SERVED.join(","), "--metrics", "127.0.0.1:9464", "--egress"], path.join(STATE, "logs/agent.log"));

  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    say("stopping the agent and the Worker");
    await agent.stop();
    await worker.stop();
    process.exit(0);
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);

  console.log(`
  gcfaas is running.

    URL          ${worker.url}
    console      ${worker.url}/console   (sign in with the token)
    API docs     ${worker.url}/docs      (OpenAPI: ${worker.url}/v1/openapi.json)
    token        ${creds.token}
    admin token  ${creds.adminToken}   (ADMIN_TOKEN, for /v1/admin)
    logs         ${path.join(STATE, "logs")}/worker.log, agent.log
    state        ${STATE} (kept across restarts; delete it for a fresh start)

  Try:
    curl -s ${worker.url}/v1/function/list -H "Authorization: Bearer ${creds.token}"

  Ctrl-C stops everything.
`);
  await new Promise(() => undefined);
}

main().catch((e) => {
  console.error(`[start] failed: ${(e as Error).message}`);
  process.exit(1);
});
