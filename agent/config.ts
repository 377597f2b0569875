import os from "node:os";
import path from "node:path";
import { parseArgs } from "node:util";
import { z } from "zod";
import { DEFAULT_BUILD_LIMITS } from "./builder/build-function.js";
import { LANGS, type Lang } from "./runtimes/languages.js";
import { nodeId } from "../shared/protocol/messages.js";
import { readTokenFile } from "./token-file.js";
import { formatCidr, parseAllowList, parseCidr, within } from "./egress/ranges.js";
import { parseResolvers } from "./egress/dns.js";

/**
 * Every setting is a flag or an environment variable (flags win), parsed and checked in one
 * place: a bad value stops the agent at start with a message naming it.
 */
const schema = z.object({
  url: z.url({ protocol: /^https?$/, error: "must be the control plane's http(s) URL, e.g. https://api.example.com" }),
  /** Accept plain http to a host other than this one (the agent token then crosses the network in clear). */
  insecure: z.boolean(),
  token: z.string().regex(/^gca_[0-9a-f]{64}$/, "must be an agent token (gca_…) minted for this node with POST /v1/admin/agent-tokens"),
  /** Must be the node id the token was minted for (the agent checks at start). */
  nodeId,
  slots: z.coerce.number().int().min(1).max(1024),
  privileged: z.boolean(),
  /** Runs functions that asked for network egress (agent/egress/); off by default. */
  egress: z.boolean(),
  egressAllow: z.string().transform((v, ctx) => parseOr(ctx, () => parseAllowList(v))),
  /** Empty: the node's own upstream resolvers. */
  egressDns: z.string().transform((v, ctx) => (v.trim() ? parseOr(ctx, () => parseResolvers(v)) : undefined)),
  egressNetwork: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$/, "must be a Docker network name"),
  egressSubnet: z.string().transform((v, ctx) =>
    parseOr(ctx, () => {
      const c = parseCidr(v);
      if (c.prefix < 16 || c.prefix > 28) throw new Error("the prefix length must be 16-28");
      if (!PRIVATE.some((p) => within(c, parseCidr(p)))) throw new Error(`must be a private range (${PRIVATE.join(", ")})`);
      return formatCidr(c);
    }),
  ),
  defaultCpus: z.coerce.number().positive().max(64),
  defaultMemoryMiB: z.coerce.number().int().min(16),
  stateDir: z.string().min(1),
  langs: z.array(z.enum(LANGS)).min(1),
  idleTimeoutMs: z.coerce.number().int().min(1000),
  maxContainers: z.coerce.number().int().min(1),
  /** Pre-started containers per language; 0 turns the runtime pool off. */
  poolSize: z.coerce.number().int().min(0).max(64),
  poolMax: z.coerce.number().int().min(0).max(64),
  poolIdleMs: z.coerce.number().int().min(1000),
  /** Languages that get a pool: those served unless narrowed (images without a loader, say). */
  poolLangs: z.array(z.enum(LANGS)),
  keepArtifacts: z.coerce.number().int().min(1),
  buildImages: z.boolean(),
  maxBuilds: z.coerce.number().int().min(1).max(64),
  buildDiskMiB: z.coerce.number().int().min(64),
  /** The Docker Engine's mount namespace (a file such as /proc/1/ns/mnt), when the agent's may differ. */
  engineMountNs: z.string().startsWith("/", "must be an absolute path, e.g. /proc/1/ns/mnt").optional(),
  buildMemoryMiB: z.coerce.number().int().min(128),
  buildPids: z.coerce.number().int().min(64),
  // The control plane takes artifacts of at most 512 MiB.
  maxArtifactMiB: z.coerce.number().int().min(1).max(512),
  /** "auto" runs unprivileged functions and builds under gVisor where Docker has the runsc runtime. */
  sandbox: z.enum(["auto", "runsc", "runc"], { error: "must be auto, runsc or runc" }),
  metrics: z
    .string()
    .regex(/^(?:(\[[0-9a-fA-F:]+\]|[A-Za-z0-9.-]+):)?\d{1,5}$/, "must be PORT or HOST:PORT (0 turns metrics off)")
    .transform(parseListenAddress)
    .refine((a) => a === null || a.port <= 65535, "port must be at most 65535"),
});
export type AgentConfig = z.infer<typeof checked> & { cpus: number; memMiB: number };

/** Loopback hosts, where plain http never leaves the machine: 127.0.0.0/8, ::1, localhost. */
const isLoopback = (host: string) => host === "localhost" || host === "[::1]" || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);

const checked = schema.superRefine((c, ctx) => {
  const u = new URL(c.url);
  if (u.protocol === "http:" && !isLoopback(u.hostname) && !c.insecure) {
    ctx.addIssue({ code: "custom", path: ["url"], message: `${c.url} is plain http to another host: the agent token would cross the network in clear. Use https://, a loopback address, or --insecure (GCFAAS_INSECURE=1) to accept it` });
  }
});

const FLAGS = {
  url: { type: "string", env: "GCFAAS_URL" },
  token: { type: "string", env: "GCFAAS_AGENT_TOKEN" },
  "token-file": { type: "string", env: "GCFAAS_AGENT_TOKEN_FILE" },
  "node-id": { type: "string", env: "GCFAAS_NODE_ID" },
  insecure: { type: "boolean", env: "GCFAAS_INSECURE" },
  slots: { type: "string", env: "GCFAAS_SLOTS" },
  privileged: { type: "boolean", env: "GCFAAS_ALLOW_PRIVILEGED" },
  egress: { type: "boolean", env: "GCFAAS_EGRESS" },
  "egress-allow": { type: "string", env: "GCFAAS_EGRESS_ALLOW" },
  "egress-dns": { type: "string", env: "GCFAAS_EGRESS_DNS" },
  "egress-network": { type: "string", env: "GCFAAS_EGRESS_NETWORK" },
  "egress-subnet": { type: "string", env: "GCFAAS_EGRESS_SUBNET" },
  "default-cpus": { type: "string", env: "GCFAAS_DEFAULT_CPUS" },
  "default-memory": { type: "string", env: "GCFAAS_DEFAULT_MEMORY_MIB" },
  "state-dir": { type: "string", env: "GCFAAS_STATE_DIR" },
  langs: { type: "string", env: "GCFAAS_LANGS" },
  "idle-timeout": { type: "string", env: "GCFAAS_IDLE_TIMEOUT_MS" },
  "max-containers": { type: "string", env: "GCFAAS_MAX_CONTAINERS" },
  "pool-size": { type: "string", env: "GCFAAS_POOL_SIZE" },
  "pool-max": { type: "string", env: "GCFAAS_POOL_MAX" },
  "pool-idle": { type: "string", env: "GCFAAS_POOL_IDLE_MS" },
  "pool-langs": { type: "string", env: "GCFAAS_POOL_LANGS" },
  "keep-artifacts": { type: "string", env: "GCFAAS_KEEP_ARTIFACTS" },
  "no-build-images": { type: "boolean", env: "GCFAAS_NO_BUILD_IMAGES" },
  "max-builds": { type: "string", env: "GCFAAS_MAX_BUILDS" },
  "build-disk": { type: "string", env: "GCFAAS_BUILD_DISK_MIB" },
  "engine-mount-ns": { type: "string", env: "GCFAAS_ENGINE_MOUNT_NS" },
  "build-memory": { type: "string", env: "GCFAAS_BUILD_MEMORY_MIB" },
  "build-pids": { type: "string", env: "GCFAAS_BUILD_PIDS" },
  "max-artifact": { type: "string", env: "GCFAAS_MAX_ARTIFACT_MIB" },
  metrics: { type: "string", env: "GCFAAS_METRICS" },
  sandbox: { type: "string", env: "GCFAAS_SANDBOX" },
  help: { type: "boolean", env: "" },
} as const;

export const USAGE = `gcfaas-agent: runs builds and tasks of the control plane in Docker on this host

  --url URL              control plane URL                      (GCFAAS_URL)
  --token-file FILE      file (mode 600) holding the agent token (GCFAAS_AGENT_TOKEN_FILE)
  --token TOKEN          agent token, minted for this node id; prefer the file or the
                         environment: a command line shows in ps (GCFAAS_AGENT_TOKEN)
  --node-id ID           this host's id, as its token [hostname] (GCFAAS_NODE_ID)
  --insecure             accept an http:// URL to another host: the token would travel
                         in clear [refused]                     (GCFAAS_INSECURE=1)
  --slots N              concurrent builds+tasks [2 x CPUs]     (GCFAAS_SLOTS)
  --privileged           allow privileged functions [no]        (GCFAAS_ALLOW_PRIVILEGED=1)
  --egress               run functions that asked for network egress: public
                         addresses only, policed by iptables outside the sandbox [no] (GCFAAS_EGRESS=1)
  --egress-allow CIDR,...  private ranges egress functions may reach too, e.g. a
                         database on the LAN [none]             (GCFAAS_EGRESS_ALLOW)
  --egress-dns IP,...    resolvers of egress functions [the host's upstream ones] (GCFAAS_EGRESS_DNS)
  --egress-network NAME  the Docker network of egress functions [gcfaas-egress] (GCFAAS_EGRESS_NETWORK)
  --egress-subnet CIDR   its private subnet [10.213.0.0/22]     (GCFAAS_EGRESS_SUBNET)
  --default-cpus N       CPUs for cpuCount 0 [1]                (GCFAAS_DEFAULT_CPUS)
  --default-memory MIB   memory for memSize 0 [256]             (GCFAAS_DEFAULT_MEMORY_MIB)
  --state-dir DIR        artifacts, sockets, builds [./.state/agent-<node-id>]  (GCFAAS_STATE_DIR)
  --langs py,js,...      languages served [all]                 (GCFAAS_LANGS)
  --idle-timeout MS      warm container idle timeout [300000]   (GCFAAS_IDLE_TIMEOUT_MS)
  --max-containers N     containers on this host [16]           (GCFAAS_MAX_CONTAINERS)
  --pool-size N          pre-started containers per language, 0 = no pool [1] (GCFAAS_POOL_SIZE)
  --pool-max N           containers a language's pool grows to on demand [4] (GCFAAS_POOL_MAX)
  --pool-langs py,js,... languages with a pool [those served]   (GCFAAS_POOL_LANGS)
  --pool-idle MS         demand window; pooled containers above it go after [120000] (GCFAAS_POOL_IDLE_MS)
  --keep-artifacts N     builds whose artifacts stay on disk [32] (GCFAAS_KEEP_ARTIFACTS)
  --no-build-images      do not build missing runtime images    (GCFAAS_NO_BUILD_IMAGES=1)
  --max-builds N         builds at once on this host [2]        (GCFAAS_MAX_BUILDS)
  --build-disk MIB       a build's writable space [4096]        (GCFAAS_BUILD_DISK_MIB)
  --engine-mount-ns FILE the Docker Engine's mount namespace, where build spaces are
                         mounted too, e.g. /proc/1/ns/mnt [the agent's] (GCFAAS_ENGINE_MOUNT_NS)
  --build-memory MIB     a build's memory [2048]                (GCFAAS_BUILD_MEMORY_MIB)
  --build-pids N         a build's processes and threads [1024] (GCFAAS_BUILD_PIDS)
  --max-artifact MIB     largest artifact a build makes [256]   (GCFAAS_MAX_ARTIFACT_MIB)
  --metrics [HOST:]PORT  Prometheus metrics at /metrics, 0 = off [127.0.0.1:9464] (GCFAAS_METRICS)
  --sandbox auto|runsc|runc  runtime of unprivileged functions and builds: gVisor (runsc)
                         where Docker has it, else runc [auto]  (GCFAAS_SANDBOX)
`;

/** "9464" (loopback), "0.0.0.0:9464", "[::1]:9464"; port 0 means no metrics server. */
function parseListenAddress(value: string): { host: string; port: number } | null {
  const at = value.lastIndexOf(":");
  const port = Number(value.slice(at + 1));
  if (port === 0) return null;
  const host = at < 0 ? "127.0.0.1" : value.slice(0, at).replace(/^\[(.*)\]$/, "$1");
  return { host, port };
}

const PRIVATE = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"];

/** A parse that throws a sentence becomes a zod issue naming the setting. */
function parseOr<T>(ctx: z.RefinementCtx, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    ctx.addIssue({ code: "custom", message: (err as Error).message });
    return z.NEVER;
  }
}

const tokenFromFile = (file: string | undefined) => (file ? readTokenFile(file) : undefined);

const truthy = (v: string | undefined) => v !== undefined && /^(1|true|yes|on)$/i.test(v);

export function loadConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): AgentConfig | "help" {
  const options = Object.fromEntries(Object.entries(FLAGS).map(([k, v]) => [k, { type: v.type }])) as Record<string, { type: "string" | "boolean" }>;
  const { values } = parseArgs({ args: argv, options, strict: true, allowPositionals: false });
  if (values.help) return "help";
  const get = (flag: keyof typeof FLAGS) => {
    const v = values[flag];
    if (v !== undefined) return v;
    const e = FLAGS[flag].env ? env[FLAGS[flag].env] : undefined;
    return FLAGS[flag].type === "boolean" ? truthy(e) : e;
  };
  const list = (flag: "langs" | "pool-langs") => (get(flag) as string | undefined)?.split(",").map((s) => s.trim().toLowerCase()).filter(Boolean);
  const nodeId = (get("node-id") as string | undefined) ?? os.hostname().replace(/[^A-Za-z0-9._-]/g, "-").slice(0, 64);
  const raw = {
    url: get("url"),
    token: get("token") ?? tokenFromFile(get("token-file") as string | undefined),
    nodeId,
    insecure: get("insecure") ?? false,
    slots: get("slots") ?? String(os.cpus().length * 2),
    privileged: get("privileged") ?? false,
    egress: get("egress") ?? false,
    egressAllow: get("egress-allow") ?? "",
    egressDns: get("egress-dns") ?? "",
    egressNetwork: get("egress-network") ?? "gcfaas-egress",
    egressSubnet: get("egress-subnet") ?? "10.213.0.0/22",
    defaultCpus: get("default-cpus") ?? "1",
    defaultMemoryMiB: get("default-memory") ?? "256",
    stateDir: path.resolve((get("state-dir") as string | undefined) ?? `.state/agent-${nodeId}`),
    langs: list("langs") ?? [...LANGS],
    idleTimeoutMs: get("idle-timeout") ?? "300000",
    maxContainers: get("max-containers") ?? "16",
    poolSize: get("pool-size") ?? "1",
    poolMax: get("pool-max") ?? "4",
    poolIdleMs: get("pool-idle") ?? "120000",
    poolLangs: list("pool-langs") ?? list("langs") ?? [...LANGS],
    keepArtifacts: get("keep-artifacts") ?? "32",
    buildImages: !get("no-build-images"),
    maxBuilds: get("max-builds") ?? "2",
    buildDiskMiB: get("build-disk") ?? String(DEFAULT_BUILD_LIMITS.diskMiB),
    engineMountNs: get("engine-mount-ns") || undefined,
    buildMemoryMiB: get("build-memory") ?? String(DEFAULT_BUILD_LIMITS.memoryMiB),
    buildPids: get("build-pids") ?? String(DEFAULT_BUILD_LIMITS.pids),
    maxArtifactMiB: get("max-artifact") ?? String(DEFAULT_BUILD_LIMITS.maxArtifactMiB),
    metrics: get("metrics") ?? "127.0.0.1:9464",
    sandbox: get("sandbox") ?? "auto",
  };
  const parsed = checked.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`invalid agent configuration:\n${lines.join("\n")}\n\n${USAGE}`);
  }
  const langs = parsed.data.langs as Lang[];
  return { ...parsed.data, langs, poolLangs: (parsed.data.poolLangs as Lang[]).filter((l) => langs.includes(l)), cpus: os.cpus().length, memMiB: Math.floor(os.totalmem() / 1048576) };
}
