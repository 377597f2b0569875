import { ok, type ApiClient } from "../api-client.js";

/** What the service holds for one function, in the shapes `up` compares with the file. */
export interface FunctionState {
  id: string;
  name: string;
  lang: string;
  description: string;
  capabilities: { timeout: number; cpuCount: number; memSize: number; privileged: boolean };
  env: Record<string, string>;
  secrets: string[];
  endpoints: EndpointRecord[];
  schedules: ScheduleRecord[];
  /** Triggers whose first function is this one. */
  triggers: TriggerRecord[];
  newestBuild?: { id: string; status: string };
}

export interface EndpointRecord {
  id: string;
  description: string;
  dailyLimit: number;
  origin: string[];
  ip: string[];
  timeLimit: { from: string; to: string; timezone: string } | null;
}

export interface ScheduleRecord {
  id: string;
  active: boolean;
  cron: string;
  timezone: string;
  description: string;
}

export interface TriggerRecord {
  id: string;
  nextId: string;
  status: number;
  includeResult: boolean;
  description: string;
}

/** Every page of one of the API's paged lists. */
async function allPages<T>(list: (query: { functionId: string; page: number; limit: number }) => Promise<{ results: T[]; pageCount: number }>, functionId: string, limit: number): Promise<T[]> {
  const out: T[] = [];
  for (let page = 1; ; page++) {
    const env = await list({ functionId, page, limit });
    out.push(...env.results);
    if (page >= env.pageCount) return out;
  }
}

export async function readFunctionState(api: ApiClient, id: string): Promise<FunctionState> {
  const [fn, env, secrets, endpointList, schedules, triggerList, builds] = await Promise.all([
    ok(api.GET("/v1/function/{id}", { params: { path: { id } } })),
    ok(api.GET("/v1/function/{id}/env", { params: { path: { id } } })),
    ok(api.GET("/v1/function/{id}/secrets", { params: { path: { id } } })),
    allPages((query) => ok(api.GET("/v1/endpoint/list", { params: { query } })), id, 999),
    allPages((query) => ok(api.GET("/v1/scheduled/list", { params: { query } })), id, 999),
    allPages((query) => ok(api.GET("/v1/trigger/list", { params: { query } })), id, 20),
    ok(api.GET("/v1/build/list", { params: { query: { functionId: id, limit: 1 } } })),
  ]);
  // The lists leave out fields that are compared (an endpoint's limits, a trigger's description).
  const [endpoints, triggers] = await Promise.all([
    Promise.all(endpointList.map((e) => ok(api.GET("/v1/endpoint/{id}", { params: { path: { id: e.id } } })))),
    Promise.all(triggerList.map((t) => ok(api.GET("/v1/trigger/{id}", { params: { path: { id: t.id } } })))),
  ]);
  const newest = builds.results[0];
  return {
    id: fn.id,
    name: fn.name,
    lang: fn.lang,
    description: fn.description,
    capabilities: fn.capabilities,
    env,
    secrets: secrets.map((s) => s.name),
    endpoints,
    schedules,
    triggers,
    ...(newest ? { newestBuild: { id: newest.id, status: newest.status } } : {}),
  };
}
