import { ADMIN_TOKEN, AgentProcess, LocalWorker, ROOT, freePort } from "../../scripts/lib/local-service.js";

export { ADMIN_TOKEN, AgentProcess, LocalWorker, ROOT, freePort };

export interface Api {
  (method: string, p: string, o?: { json?: unknown; body?: Buffer; headers?: Record<string, string>; token?: string }): Promise<Response>;
  json<T = any>(method: string, p: string, status: number, o?: { json?: unknown; body?: Buffer; headers?: Record<string, string>; token?: string }): Promise<T>;
}

export function api(baseUrl: string, defaultToken?: string): Api {
  const call = (async (method, p, o = {}) => {
    const headers: Record<string, string> = { ...o.headers };
    const token = o.token ?? defaultToken;
    if (token) headers.authorization = `Bearer ${token}`;
    let body: string | Buffer | undefined = o.body;
    if (o.json !== undefined) {
      body = JSON.stringify(o.json);
      headers["content-type"] ??= "application/json";
    }
    return fetch(`${baseUrl}${p}`, { method, headers, body });
  }) as Api;
  call.json = async (method, p, status, o) => {
    const res = await call(method, p, o);
    const text = await res.text();
    if (res.status !== status) throw new Error(`${method} ${p}: expected ${status}, got ${res.status}: ${text}`);
    return text ? JSON.parse(text) : undefined;
  };
  return call;
}

/** A Worker on local workerd, one account on it, and one agent: what a file of examples runs against. */
export async function localStack(o: { account: string; nodeId: string; agentArgs?: string[]; logFile?: string; testScheduled?: boolean; d1DelayMs?: number; testD1Failures?: boolean }) {
  const worker = await LocalWorker.create({
    ...(o.logFile ? { logFile: o.logFile } : {}), testScheduled: o.testScheduled ?? false,
    ...(o.d1DelayMs !== undefined ? { d1DelayMs: o.d1DelayMs } : {}), testD1Failures: o.testD1Failures ?? false,
  });
  const acct = await api(worker.url, ADMIN_TOKEN).json("POST", "/v1/admin/accounts", 201, { json: { name: o.account } });
  const agent = await AgentProcess.start(worker, await worker.agentToken(o.nodeId), o.nodeId, o.agentArgs ?? ["--slots", "2"]);
  const token: string = acct.token;
  return { worker, agent, token, accountId: acct.accountId as string, user: api(worker.url, token) };
}
