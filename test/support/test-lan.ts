import { execFile, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { promisify } from "node:util";

const run = promisify(execFile);
const sh = (cmd: string, args: string[]) => run(cmd, args, { timeout: 30_000 });

/**
 * A network this machine makes for a test and takes down after it: a network namespace joined to
 * the host by a veth pair, holding test hosts at addresses of every kind the egress policy judges
 * (a "public" one, private ones, shared, link-local, reserved), each routed from the host into the
 * namespace and nowhere else. One HTTP server in the namespace answers on all of them.
 *
 * The machines have no internet and must not try to reach it: before a test uses an address, it
 * checks that the host routes it into this namespace (`ip route get`), so that a missing route
 * fails the test instead of sending packets out of the machine's default route.
 */
export interface TestLan {
  /** Addresses of the test hosts, by kind. */
  hosts: Record<TestHostKind, string>;
  /** The host's own address on the veth (the node itself, as seen from the namespace). */
  hostSide: string;
  port: number;
  /** A private range, as `--egress-allow` would name it, that holds the `allowed` host. */
  allowedRange: string;
  close(): Promise<void>;
}

export type TestHostKind = "public" | "allowed" | "rfc1918_10" | "rfc1918_172" | "shared" | "linkLocal" | "benchmark" | "classE" | "resolver";

/** Names the test resolver answers (A records; every other name: NXDOMAIN). */
export const TEST_NAMES = { public: "public.test-lan.example", linkLocal: "metadata.test-lan.example" } as const;

// An HTTP server on every address of the namespace, and a resolver (UDP 53) on the resolver's
// address that answers TEST_NAMES' A records from argv[3] (JSON name → address).
const SERVER = `
const http = require("node:http");
const dgram = require("node:dgram");
const names = JSON.parse(process.argv[3]);
const dns = dgram.createSocket("udp4");
dns.on("message", (q, from) => {
  let i = 12, labels = [];
  while (q[i]) { labels.push(q.subarray(i + 1, i + 1 + q[i]).toString()); i += q[i] + 1; }
  const qtype = q.readUInt16BE(i + 1);
  const question = q.subarray(12, i + 5);
  const name = labels.join(".").toLowerCase();
  const address = names[name];
  const header = Buffer.alloc(12);
  header.writeUInt16BE(q.readUInt16BE(0), 0);
  header.writeUInt16BE(address ? 0x8180 : 0x8183, 2);
  header.writeUInt16BE(1, 4);
  const answer = address && qtype === 1 ? Buffer.concat([Buffer.from([0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4]), Buffer.from(address.split(".").map(Number))]) : Buffer.alloc(0);
  header.writeUInt16BE(answer.length ? 1 : 0, 6);
  dns.send(Buffer.concat([header, question, answer]), from.port, from.address);
});
dns.bind(53, process.argv[2], () => {
  http.createServer((req, res) => {
    res.setHeader("content-type", "text/plain");
    res.end("test host " + req.socket.localAddress + "\\n");
  }).listen(Number(process.argv[1]), "0.0.0.0", () => console.log("listening"));
});
`;

export async function startTestLan(): Promise<TestLan> {
  const tag = randomBytes(2).toString("hex");
  const n = 16 + (parseInt(tag, 16) % 200);
  const ns = `gcfaas-lan-${tag}`;
  const hostVeth = `gtl${tag}h`;
  const nsVeth = `gtl${tag}n`;
  // 11.0.0.0/8 is public address space (not special-purpose); routed into the namespace, it stands
  // for "a server on the internet" without any packet leaving this machine.
  const hosts: Record<TestHostKind, string> = {
    public: `11.213.${n}.2`,
    allowed: `192.168.${n}.2`,
    rfc1918_10: `10.216.${n}.2`,
    rfc1918_172: `172.31.${n}.2`,
    shared: `100.100.${n}.2`,
    linkLocal: `169.254.${n}.254`,
    benchmark: `198.18.${n}.2`,
    classE: `240.0.${n}.2`,
    resolver: `10.216.${n}.53`,
  };
  const hostSide = `11.213.${n}.1`;
  const port = 18000 + n;
  let server: ChildProcess | undefined;
  const close = async () => {
    server?.kill("SIGKILL");
    await sh("ip", ["netns", "del", ns]).catch(() => undefined);
    await sh("ip", ["link", "del", hostVeth]).catch(() => undefined);
  };
  try {
    await sh("ip", ["netns", "add", ns]);
    await sh("ip", ["link", "add", hostVeth, "type", "veth", "peer", "name", nsVeth, "netns", ns]);
    await sh("ip", ["addr", "add", `${hostSide}/24`, "dev", hostVeth]);
    await sh("ip", ["link", "set", hostVeth, "up"]);
    const inNs = (args: string[]) => sh("ip", ["netns", "exec", ns, ...args]);
    await inNs(["ip", "link", "set", "lo", "up"]);
    await inNs(["ip", "addr", "add", `${hosts.public}/24`, "dev", nsVeth]);
    for (const [kind, address] of Object.entries(hosts)) if (kind !== "public") await inNs(["ip", "addr", "add", `${address}/32`, "dev", nsVeth]);
    await inNs(["ip", "link", "set", nsVeth, "up"]);
    await inNs(["ip", "route", "add", "default", "via", hostSide]);
    for (const [kind, address] of Object.entries(hosts)) if (kind !== "public") await sh("ip", ["route", "add", `${address}/32`, "dev", hostVeth]);
    for (const address of Object.values(hosts)) await assertRoutedInto(address, hostVeth);
    const names = { [TEST_NAMES.public]: hosts.public, [TEST_NAMES.linkLocal]: hosts.linkLocal };
    server = spawn("ip", ["netns", "exec", ns, process.execPath, "-e", SERVER, String(port), hosts.resolver, JSON.stringify(names)], { stdio: ["ignore", "pipe", "inherit"] });
    await new Promise<void>((resolve, reject) => {
      server!.stdout!.once("data", () => resolve());
      server!.once("exit", (code) => reject(new Error(`the test host exited (${code})`)));
    });
    return { hosts, hostSide, port, allowedRange: `192.168.${n}.0/24`, close };
  } catch (err) {
    await close();
    throw err;
  }
}

/** Fails unless the host sends packets for `address` into the test namespace's veth. */
export async function assertRoutedInto(address: string, dev: string): Promise<void> {
  const { stdout } = await sh("ip", ["route", "get", address]);
  if (!new RegExp(`\\bdev ${dev}\\b`).test(stdout)) throw new Error(`${address} is not routed into the test network (${stdout.trim()}); refusing to use it`);
}
