import type { ApiClient } from "../api-client.js";
import type { Envelope } from "../../shared/schemas/common.js";

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
async function allPages<T>(api: ApiClient, path: string, functionId: string, limit: number): Promise<T[]> {
  const out: T[] = [];
  for (let page = 1; ; page++) {
    const env = await api.get<Envelope<T>>(path, { functionId, page, limit });
    out.push(...env.results);
    if (page >= env.pageCount) return out;
  }
}

export async function readFunctionState(api: ApiClient, id: string): Promise<FunctionState> {
  const [fn, env, secrets, endpointList, schedules, triggerList, builds] = await Promise.all([
    api.get<Omit<FunctionState, "env" | "secrets" | "endpoints" | "schedules" | "triggers">>(`/v1/function/${id}`),
    api.get<Record<string, string>>(`/v1/function/${id}/env`),
    api.get<{ name: string }[]>(`/v1/function/${id}/secrets`),
    allPages<{ id: string }>(api, "/v1/endpoint/list", id, 999),
    allPages<ScheduleRecord>(api, "/v1/scheduled/list", id, 999),
    allPages<{ id: string }>(api, "/v1/trigger/list", id, 20),
    api.get<Envelope<{ id: string; status: string }>>("/v1/build/list", { functionId: id, limit: 1 }),
  ]);
  // The lists leave out fields that are compared (an endpoint's limits, a trigger's description).
  const [endpoints, triggers] = await Promise.all([
    Promise.all(endpointList.map((e) => api.get<EndpointRecord>(`/v1/endpoint/${e.id}`))),
    Promise.all(triggerList.map((t) => api.get<TriggerRecord>(`/v1/trigger/${t.id}`))),
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
