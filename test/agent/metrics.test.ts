import { afterEach, describe, expect, it } from "vitest";
import { loadConfig } from "../../agent/config.js";
import { AgentMetrics, type AgentGaugeSource } from "../../agent/metrics/agent-metrics.js";
import { startMetricsServer, type MetricsServer } from "../../agent/metrics/server.js";
import type { AgentMessage } from "../../shared/protocol/messages.js";

const TOKEN = `gca_${"a".repeat(64)}`;
const servers: MetricsServer[] = [];

afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

/** A node whose state the test moves by hand, as the agent's running work would. */
function fakeNode(): AgentGaugeSource & { state: { busy: number; builds: number; warm: number; pooled: Record<string, number>; draining: boolean } } {
  const state = { busy: 0, builds: 0, warm: 0, pooled: {} as Record<string, number>, draining: false };
  return {
    state,
    slots: () => 8,
    busySlots: () => state.busy,
    runningBuilds: () => state.builds,
    warmContainers: () => state.warm,
    pooledContainers: () => state.pooled,
    draining: () => state.draining,
  };
}

async function serve(metrics: AgentMetrics): Promise<string> {
  const server = await startMetricsServer(metrics.registry, "127.0.0.1", 0);
  servers.push(server);
  return `http://127.0.0.1:${server.address.port}`;
}

async function scrape(base: string): Promise<string> {
  const res = await fetch(`${base}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
  return res.text();
}

/** The value of one sample line of the text exposition, e.g. sample(t, "x_total", 'kind="a"'). */
function sample(text: string, name: string, labels = ""): number | undefined {
  const key = labels ? `${name}{${labels}}` : name;
  const line = text.split("\n").find((l) => l.startsWith(`${key} `));
  return line === undefined ? undefined : Number(line.slice(key.length + 1));
}

const taskDone = (status: number): AgentMessage => ({ type: "task.done", taskId: "t", status, headers: {}, body: null, bodyUploaded: false, log: [], logUploaded: false, durationMs: 1 });
const buildDone = (ok: boolean): AgentMessage => (ok ? { type: "build.done", buildId: "b", ok: true, artifactSize: 10 } : { type: "build.done", buildId: "b", ok: false, reason: "pip failed" });

describe("GET /metrics", () => {
  it("exports slots, busy slots, running builds and warm containers as the node has them at scrape time", async () => {
    const node = fakeNode();
    const base = await serve(new AgentMetrics(node));
    let text = await scrape(base);
    expect(sample(text, "gcfaas_agent_slots")).toBe(8);
    expect(sample(text, "gcfaas_agent_slots_busy")).toBe(0);
    expect(sample(text, "gcfaas_agent_warm_containers")).toBe(0);

    Object.assign(node.state, { busy: 3, builds: 1, warm: 5, pooled: { py: 2, go: 1 } });
    text = await scrape(base);
    expect(sample(text, "gcfaas_agent_pooled_containers", 'lang="py"')).toBe(2);
    expect(sample(text, "gcfaas_agent_pooled_containers", 'lang="go"')).toBe(1);
    expect(sample(text, "gcfaas_agent_slots_busy")).toBe(3);
    expect(sample(text, "gcfaas_agent_builds_running")).toBe(1);
    expect(sample(text, "gcfaas_agent_warm_containers")).toBe(5);
    expect(sample(text, "gcfaas_agent_draining")).toBe(0);

    node.state.draining = true;
    text = await scrape(base);
    expect(sample(text, "gcfaas_agent_draining")).toBe(1);
    expect(sample(text, "gcfaas_agent_slots")).toBe(0);
  });

  it("puts task and build durations into histograms by language and outcome", async () => {
    const metrics = new AgentMetrics(fakeNode());
    const base = await serve(metrics);
    metrics.finished("py", 0.03, taskDone(200));
    metrics.finished("py", 2, taskDone(200));
    metrics.finished("js", 0.2, taskDone(404));
    metrics.finished("go", 42, buildDone(true));
    metrics.finished("py", 0.5, { type: "build.log", buildId: "b", first: 0, lines: ["not an outcome"] });
    const text = await scrape(base);

    expect(sample(text, "gcfaas_agent_task_duration_seconds_count", 'lang="py",status="2xx"')).toBe(2);
    expect(sample(text, "gcfaas_agent_task_duration_seconds_sum", 'lang="py",status="2xx"')).toBeCloseTo(2.03);
    expect(sample(text, "gcfaas_agent_task_duration_seconds_bucket", 'le="0.05",lang="py",status="2xx"')).toBe(1);
    expect(sample(text, "gcfaas_agent_task_duration_seconds_bucket", 'le="+Inf",lang="py",status="2xx"')).toBe(2);
    expect(sample(text, "gcfaas_agent_task_duration_seconds_count", 'lang="js",status="4xx"')).toBe(1);
    expect(sample(text, "gcfaas_agent_build_duration_seconds_count", 'lang="go",result="success"')).toBe(1);
    expect(sample(text, "gcfaas_agent_build_duration_seconds_bucket", 'le="30",lang="go",result="success"')).toBe(0);
    expect(sample(text, "gcfaas_agent_build_duration_seconds_bucket", 'le="60",lang="go",result="success"')).toBe(1);
    expect(sample(text, "gcfaas_agent_build_duration_seconds_count", 'lang="py",result="success"')).toBeUndefined();
  });

  it("counts failures by kind, every kind present from the start", async () => {
    const metrics = new AgentMetrics(fakeNode());
    const base = await serve(metrics);
    let text = await scrape(base);
    for (const kind of ["build_failed", "task_timeout", "task_error", "agent_error"]) expect(sample(text, "gcfaas_agent_failures_total", `kind="${kind}"`)).toBe(0);

    metrics.finished("rb", 30, buildDone(false));
    metrics.finished("py", 10, taskDone(504));
    metrics.finished("py", 1, taskDone(500));
    metrics.finished("py", 1, taskDone(502));
    metrics.finished("py", 1, taskDone(499));
    metrics.failed("agent_error");
    text = await scrape(base);
    expect(sample(text, "gcfaas_agent_failures_total", 'kind="build_failed"')).toBe(1);
    expect(sample(text, "gcfaas_agent_failures_total", 'kind="task_timeout"')).toBe(1);
    expect(sample(text, "gcfaas_agent_failures_total", 'kind="task_error"')).toBe(2);
    expect(sample(text, "gcfaas_agent_failures_total", 'kind="agent_error"')).toBe(1);
    expect(sample(text, "gcfaas_agent_build_duration_seconds_count", 'lang="rb",result="failure"')).toBe(1);
  });

  it("keeps each agent's figures in its own registry and answers 404 off /metrics", async () => {
    const one = new AgentMetrics(fakeNode());
    const two = new AgentMetrics(fakeNode());
    one.failed("agent_error");
    const base = await serve(two);
    expect(sample(await scrape(base), "gcfaas_agent_failures_total", 'kind="agent_error"')).toBe(0);
    expect(sample(await scrape(base), "process_cpu_user_seconds_total")).toBeGreaterThanOrEqual(0);
    expect((await fetch(`${base}/`)).status).toBe(404);
    expect((await fetch(`${base}/metrics`, { method: "POST" })).status).toBe(404);
  });
});

describe("--metrics / GCFAAS_METRICS", () => {
  const base = ["--url", "http://127.0.0.1:8787", "--token", TOKEN, "--node-id", "n1"];
  const metricsOf = (args: string[], env: NodeJS.ProcessEnv = {}) => {
    const config = loadConfig([...base, ...args], env);
    if (config === "help") throw new Error("unexpected help");
    return config.metrics;
  };

  it("listens on 127.0.0.1:9464 unless told otherwise", () => {
    expect(metricsOf([])).toEqual({ host: "127.0.0.1", port: 9464 });
    expect(metricsOf([], { GCFAAS_METRICS: "9100" })).toEqual({ host: "127.0.0.1", port: 9100 });
    expect(metricsOf(["--metrics", "0.0.0.0:9200"], { GCFAAS_METRICS: "9100" })).toEqual({ host: "0.0.0.0", port: 9200 });
    expect(metricsOf(["--metrics", "[::1]:9300"])).toEqual({ host: "::1", port: 9300 });
  });

  it("turns metrics off with port 0", () => {
    expect(metricsOf(["--metrics", "0"])).toBeNull();
    expect(metricsOf([], { GCFAAS_METRICS: "127.0.0.1:0" })).toBeNull();
  });

  it("refuses an address that is not [HOST:]PORT", () => {
    expect(() => metricsOf(["--metrics", "http://x:1"])).toThrow(/metrics: must be PORT or HOST:PORT/);
    expect(() => metricsOf(["--metrics", "70000"])).toThrow(/metrics: port must be at most 65535/);
  });
});
