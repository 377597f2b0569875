import os from "node:os";
import http from "node:http";
import { randomBytes } from "node:crypto";
import path from "node:path";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Runner } from "../../agent/runner/index.js";
import type { Lang } from "../../agent/runtimes/languages.js";
import { dockerClient } from "../../agent/docker/client.js";
import { resolveSandbox } from "../../agent/docker/sandbox-runtime.js";
import { bridgeOf, prepareEgress, removePolicy, parseAllowList, type EgressSandbox } from "../../agent/egress/index.js";
import { ensureEnvironment } from "./helpers/environment.js";
import { probeHandlers } from "./helpers/egress-probes.js";
import { buildFiles, call, removeTempDirs, tempDir, type Built } from "./helpers/functions.js";
import { startTestLan, TEST_NAMES, type TestLan, type TestHostKind } from "../support/test-lan.js";

/**
 * Network egress on a node (agent --egress), end to end below the control plane: a real egress
 * network, the iptables policy outside the sandbox, functions under gVisor in host-network mode.
 * Every address tried belongs to test hosts this file starts on a network it creates
 * (test/support/test-lan.ts); the node's own addresses are tried through a server this process runs.
 */
const LANGS: Lang[] = ["py", "go"];
const tag = randomBytes(2).toString("hex");
const network = `gcfaas-egress-test-${tag}`;
const subnet = `10.215.${parseInt(tag, 16) % 250}.0/24`;

let lan: TestLan;
let egress: EgressSandbox;
let runner: Runner;
let hostServer: http.Server;
let hostPort: number;
const built = new Map<Lang, Built>();

beforeAll(async () => {
  await ensureEnvironment(LANGS);
  lan = await startTestLan();
  hostServer = http.createServer((_req, res) => res.end("the node itself\n"));
  await new Promise<void>((resolve) => hostServer.listen(0, "0.0.0.0", resolve));
  hostPort = (hostServer.address() as AddressInfo).port;
  const sandbox = await resolveSandbox(dockerClient(), "auto");
  const stateDir = path.join(await tempDir("state-egress"), "state");
  egress = await prepareEgress({ docker: dockerClient(), network, subnet, allow: parseAllowList(lan.allowedRange), dns: [lan.hosts.resolver], stateDir, sandbox });
  runner = await Runner.create({ stateDir, agentId: `test-egress-${tag}`, runtime: sandbox === "runsc" ? "runsc" : "", egress, allowPrivileged: true, pool: { size: 1, max: 1, idleMs: 60_000, languages: ["py"] } });
  for (const lang of LANGS) {
    const b = await buildFiles(lang, probeHandlers[lang]!);
    expect(b.result.ok, b.log.join("\n")).toBe(true);
    built.set(lang, b);
  }
}, 900_000);

afterAll(async () => {
  await runner?.shutdown();
  egress?.stop();
  await removePolicy({ bridge: bridgeOf(network), subnet }).catch(() => undefined);
  await dockerClient().getNetwork(network).remove().catch(() => undefined);
  await lan?.close();
  hostServer?.close();
  await removeTempDirs();
});

async function probe(lang: Lang, targets: string[], egressOn = true): Promise<Record<string, string>> {
  const r = await runner.invoke(call(built.get(lang)!, lang, { method: "POST", query: { mode: "probe" }, headers: { "content-type": "application/json" }, body: JSON.stringify(targets) }, { egress: egressOn, timeout: 60 }));
  expect(r.status, r.body.toString()).toBe(200);
  return JSON.parse(r.body.toString()) as Record<string, string>;
}

const at = (kind: TestHostKind) => `${lan.hosts[kind]}:${lan.port}`;

/** What this node answers at, besides loopback: every address of its own, the egress bridge's included. */
function nodeAddresses(): string[] {
  return Object.values(os.networkInterfaces()).flat().filter((a) => a && a.family === "IPv4" && !a.internal).map((a) => a!.address);
}

describe.each(LANGS)("a function with egress (%s)", (lang) => {
  it("reaches a public address", async () => {
    const out = await probe(lang, [at("public")]);
    expect(out[at("public")]).toBe(`ok test host ${lan.hosts.public}`);
  });

  it("reaches a private range the operator allowed, and no other private one", async () => {
    const out = await probe(lang, [at("allowed"), at("rfc1918_10"), at("rfc1918_172")]);
    expect(out[at("allowed")]).toBe(`ok test host ${lan.hosts.allowed}`);
    expect(out[at("rfc1918_10")]).toMatch(/^refused/);
    expect(out[at("rfc1918_172")]).toMatch(/^refused/);
  });

  it("is refused shared, link-local, benchmarking, class E, multicast and this-network addresses", async () => {
    const targets = [at("shared"), at("linkLocal"), at("benchmark"), at("classE"), `224.0.0.1:${lan.port}`, `0.0.0.1:${lan.port}`];
    const out = await probe(lang, targets);
    for (const t of targets) expect(out[t], t).toMatch(/^refused/);
  });

  it("is refused the node itself, on every address it has, loopback included", async () => {
    const targets = [...nodeAddresses(), "127.0.0.1"].map((a) => `${a}:${hostPort}`);
    expect(targets.length).toBeGreaterThan(2);
    const out = await probe(lang, targets);
    for (const t of targets) expect(out[t], t).toMatch(/^refused/);
  });

  it("is refused every IPv6 address: loopback, unique-local, link-local", async () => {
    const v6 = Object.values(os.networkInterfaces()).flat().filter((a) => a && a.family === "IPv6" && !a.internal && !a.address.startsWith("fe80")).map((a) => `[${a!.address}]:${hostPort}`);
    const targets = [`[::1]:${hostPort}`, `[fe80::1]:${hostPort}`, `[fd00::1]:${hostPort}`, ...v6];
    const out = await probe(lang, targets);
    for (const t of targets) expect(out[t], t).toMatch(/^refused/);
  });

  it("resolves names through the node's resolver, whose other ports stay closed", async () => {
    const byName = `${TEST_NAMES.public}:${lan.port}`;
    const out = await probe(lang, [byName, at("resolver")]);
    expect(out[byName]).toBe(`ok test host ${lan.hosts.public}`);
    expect(out[at("resolver")]).toMatch(/^refused/);
  });

  it("is refused what a name points to when its address is refused", async () => {
    const byName = `${TEST_NAMES.linkLocal}:${lan.port}`;
    const out = await probe(lang, [byName]);
    expect(out[byName]).toMatch(/^refused/);
    expect(out[byName]).not.toMatch(/no such host|Name or service not known|NXDOMAIN/i);
  });

  it("is refused another function's container on the same network", async () => {
    const listener = await runner.invoke(call(built.get("py")!, "py", { query: { mode: "listen" } }, { egress: true, timeout: 60 }, `fn-listener-${lang}`));
    expect(listener.status).toBe(200);
    const address = listener.body.toString().split(",")[0]!;
    // The listener answers: from the node, which the policy does not police.
    const fromNode = await fetch(`http://${address}:9000/`).then((r) => r.text());
    expect(fromNode).toBe("another function\n");
    const out = await probe(lang, [`${address}:9000`]);
    expect(out[`${address}:9000`]).toMatch(/^refused/);
  });
});

describe("the test hosts themselves", () => {
  it("answer the node on every address the functions were refused", async () => {
    for (const kind of ["rfc1918_10", "rfc1918_172", "shared", "linkLocal", "benchmark", "classE", "resolver"] as TestHostKind[]) {
      const text = await fetch(`http://${at(kind)}/`).then((r) => r.text());
      expect(text, kind).toBe(`test host ${lan.hosts[kind]}\n`);
    }
  });
});

describe.each(LANGS)("a function without egress (%s)", (lang) => {
  it("has no interface but loopback", async () => {
    const r = await runner.invoke(call(built.get(lang)!, lang, { query: { mode: "ifaces" } }, { egress: false }));
    expect(JSON.parse(r.body.toString())).toEqual(["lo"]);
  });

  it("reaches nothing, not even the public test host", async () => {
    const out = await probe(lang, [at("public")], false);
    expect(out[at("public")]).toMatch(/^refused/);
  });

  it("with egress has loopback and one interface on the egress network", async () => {
    const r = await runner.invoke(call(built.get(lang)!, lang, { query: { mode: "ifaces" } }, { egress: true }));
    expect(JSON.parse(r.body.toString())).toEqual(["eth0", "lo"]);
    expect(r.runtime).toBe(egress.runtime === "runsc-egress" ? "runsc-egress" : "runc");
  });
});

describe("a privileged function with egress", () => {
  it("keeps Docker's default capabilities but NET_RAW and NET_ADMIN: it cannot forge packets", async () => {
    const r = await runner.invoke(call(built.get("py")!, "py", { query: { mode: "caps" } }, { egress: true, privileged: true }, "fn-privileged-egress"));
    const caps = BigInt(`0x${r.body.toString().trim()}`);
    const has = (bit: number) => (caps >> BigInt(bit)) & 1n;
    expect(has(0), "CAP_CHOWN: the default set is there").toBe(1n);
    expect(has(13), "CAP_NET_RAW").toBe(0n);
    expect(has(12), "CAP_NET_ADMIN").toBe(0n);
  });
});

describe("a node without --egress", () => {
  it("refuses a call that asks for egress", async () => {
    const plain = await Runner.create({ stateDir: path.join(await tempDir("state-plain"), "state"), agentId: `test-plain-${tag}` });
    try {
      await expect(plain.invoke(call(built.get("py")!, "py", { query: { mode: "ifaces" } }, { egress: true }))).rejects.toThrow(/network egress/);
    } finally {
      await plain.shutdown();
    }
  });
});
