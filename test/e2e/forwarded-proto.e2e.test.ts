import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalWorker, api } from "./harness.js";

/**
 * The console behind a TLS-terminating proxy: the Worker is reached over plain http from the
 * proxy, which says `X-Forwarded-Proto: https`. Only a proxy listed in GCFAAS_TRUSTED_PROXIES is
 * believed. The "proxy" here is a connection from 127.0.0.2; everyone else comes from 127.0.0.1.
 */
const PROXY = "127.0.0.2";
let worker: LocalWorker;
let token: string;

beforeAll(async () => {
  const before = process.env.GCFAAS_TRUSTED_PROXIES;
  process.env.GCFAAS_TRUSTED_PROXIES = PROXY;
  try {
    worker = await LocalWorker.create();
  } finally {
    if (before === undefined) delete process.env.GCFAAS_TRUSTED_PROXIES;
    else process.env.GCFAAS_TRUSTED_PROXIES = before;
  }
  ({ token } = await api(worker.url, worker.adminToken).json("POST", "/v1/admin/accounts", 201, { json: { name: "tls" } }));
}, 300_000);

afterAll(() => worker?.dispose());

/** A sign-in from `from`, with the headers a browser (and a proxy) would add. */
function signIn(from: string, headers: Record<string, string>): Promise<{ status: number; cookie: string | undefined }> {
  const body = `token=${encodeURIComponent(token)}&next=%2Fconsole`;
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: "127.0.0.1", port: worker.port, localAddress: from, method: "POST", path: "/console/signin", headers: { "content-type": "application/x-www-form-urlencoded", "content-length": Buffer.byteLength(body), ...headers } },
      (res) => {
        res.resume();
        res.on("end", () => resolve({ status: res.statusCode ?? 0, cookie: res.headers["set-cookie"]?.join("\n") }));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

describe("POST /console/signin behind a TLS-terminating proxy", () => {
  it("gives a Secure cookie and accepts the https origin when a trusted proxy says https", async () => {
    const res = await signIn(PROXY, { "x-forwarded-proto": "https", origin: `https://127.0.0.1:${worker.port}` });
    expect(res.status).toBe(303);
    expect(res.cookie).toMatch(/^gc_console=.*; Secure/);
  });

  it("ignores X-Forwarded-Proto from a client that is not a trusted proxy", async () => {
    const https = await signIn("127.0.0.1", { "x-forwarded-proto": "https", origin: `https://127.0.0.1:${worker.port}` });
    expect(https.status).toBe(403);
    expect(https.cookie).toBeUndefined();
    const plain = await signIn("127.0.0.1", { "x-forwarded-proto": "https", origin: `http://127.0.0.1:${worker.port}` });
    expect(plain.status).toBe(303);
    expect(plain.cookie).toMatch(/^gc_console=/);
    expect(plain.cookie).not.toMatch(/Secure/);
  });

  it("keeps plain http for a trusted proxy that says http", async () => {
    const res = await signIn(PROXY, { "x-forwarded-proto": "http", origin: `http://127.0.0.1:${worker.port}` });
    expect(res.status).toBe(303);
    expect(res.cookie).not.toMatch(/Secure/);
  });
});
