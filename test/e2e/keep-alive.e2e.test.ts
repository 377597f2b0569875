import net from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LocalWorker, api } from "./harness.js";

/**
 * Keep-alive clients (Python's http.client, requests.Session, Go's http.Client, Node's keep-alive
 * agents) send their next request on the same connection. A refusal sent before the request body
 * was read must leave that connection usable. Raw sockets, because fetch would open a new one.
 */
let worker: LocalWorker;
let token: string;
let endpointId: string;
let functionId: string;

beforeAll(async () => {
  worker = await LocalWorker.create();
  const admin = api(worker.url, worker.adminToken);
  let accountId: string;
  ({ token, accountId } = await admin.json("POST", "/v1/admin/accounts", 201, { json: { name: "keepalive" } }));
  // No build may queue: every upload is refused before its body is read.
  await admin.json("PATCH", `/v1/admin/accounts/${accountId}`, 204, { json: { limits: { queuedBuilds: 0 } } });
  const user = api(worker.url, token);
  const { id: fn } = await user.json("POST", "/v1/function", 201, { json: { name: "ka", lang: "PY", type: "DOCKER" } });
  functionId = fn;
  ({ id: endpointId } = await user.json("POST", `/v1/endpoint/${fn}`, 201, { json: { ip: ["203.0.113.7"] } }));
}, 300_000);

afterAll(() => worker?.dispose());

interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Sends raw requests one after another on one connection and parses each response. */
class Connection {
  private buffer: Buffer = Buffer.alloc(0);
  private waiting?: () => void;
  closed = false;
  private constructor(private readonly socket: net.Socket) {
    socket.on("data", (d) => {
      this.buffer = Buffer.concat([this.buffer, d]);
      this.waiting?.();
    });
    socket.on("close", () => {
      this.closed = true;
      this.waiting?.();
    });
    socket.on("error", () => undefined);
  }

  static open(port: number): Promise<Connection> {
    return new Promise((resolve, reject) => {
      const s = net.connect(port, "127.0.0.1", () => resolve(new Connection(s)));
      s.once("error", reject);
    });
  }

  async request(method: string, path: string, headers: Record<string, string>, body = ""): Promise<RawResponse> {
    if (this.closed) throw new Error("connection closed before the request");
    const head = [`${method} ${path} HTTP/1.1`, "Host: 127.0.0.1", `Content-Length: ${Buffer.byteLength(body)}`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    this.socket.write(`${head.join("\r\n")}\r\n\r\n${body}`);
    return this.readResponse();
  }

  private async readResponse(): Promise<RawResponse> {
    for (;;) {
      const parsed = this.parse();
      if (parsed) return parsed;
      if (this.closed) throw new Error("connection closed before a response");
      await new Promise<void>((r) => (this.waiting = r));
    }
  }

  private parse(): RawResponse | undefined {
    const end = this.buffer.indexOf("\r\n\r\n");
    if (end < 0) return undefined;
    const [statusLine, ...lines] = this.buffer.subarray(0, end).toString("latin1").split("\r\n");
    const headers: Record<string, string> = {};
    for (const l of lines) headers[l.slice(0, l.indexOf(":")).toLowerCase()] = l.slice(l.indexOf(":") + 1).trim();
    let body: Buffer;
    let rest: Buffer;
    if (headers["transfer-encoding"]?.includes("chunked")) {
      const chunks: Buffer[] = [];
      let at = end + 4;
      for (;;) {
        const lineEnd = this.buffer.indexOf("\r\n", at);
        if (lineEnd < 0) return undefined;
        const size = parseInt(this.buffer.subarray(at, lineEnd).toString(), 16);
        if (this.buffer.length < lineEnd + 2 + size + 2) return undefined;
        if (size === 0) {
          rest = this.buffer.subarray(lineEnd + 4);
          break;
        }
        chunks.push(this.buffer.subarray(lineEnd + 2, lineEnd + 2 + size));
        at = lineEnd + 2 + size + 2;
      }
      body = Buffer.concat(chunks);
    } else {
      const length = Number(headers["content-length"] ?? 0);
      if (this.buffer.length < end + 4 + length) return undefined;
      body = this.buffer.subarray(end + 4, end + 4 + length);
      rest = this.buffer.subarray(end + 4 + length);
    }
    this.buffer = rest;
    return { status: Number(statusLine!.split(" ")[1]), headers, body: body.toString() };
  }

  close() {
    this.socket.destroy();
  }
}

const aBody = JSON.stringify({ data: "x".repeat(64 * 1024) });

describe("a refused request with a body, then another request on the same connection", () => {
  const refusals: [string, () => [string, string, Record<string, string>], number][] = [
    ["401 without a token", () => ["POST", "/v1/function", { "Content-Type": "application/json" }], 401],
    ["404 for an unknown route", () => ["POST", "/v1/nowhere", { "Content-Type": "application/json", Authorization: `Bearer ${token}` }], 404],
    ["404 for an unknown public endpoint", () => ["POST", "/gc/nosuchendpoint", { "Content-Type": "application/json" }], 404],
    ["403 from an endpoint's ip restriction", () => ["POST", `/gc/${endpointId}`, { "Content-Type": "application/json" }], 403],
    ["405 for a known path and the wrong method", () => ["PUT", "/v1/function/list", { "Content-Type": "application/json", Authorization: `Bearer ${token}` }], 405],
    ["413 for a form over the sign-in limit, refused unread", () => ["POST", "/console/signin", { "Content-Type": "application/x-www-form-urlencoded" }], 413],
    ["415 for a build without application/octet-stream", () => ["POST", `/v1/build/${functionId}?arch=amd64`, { "Content-Type": "text/plain", Authorization: `Bearer ${token}` }], 415],
    ["429 for a build past the account's queuedBuilds", () => ["POST", `/v1/build/${functionId}?arch=amd64`, { "Content-Type": "application/octet-stream", Authorization: `Bearer ${token}` }], 429],
  ];

  for (const [name, request, status] of refusals)
    it(`keeps the connection usable after ${name}`, async () => {
      const conn = await Connection.open(worker.port);
      try {
        const [method, path, headers] = request();
        const refused = await conn.request(method, path, headers, aBody);
        expect(refused.status).toBe(status);
        const next = await conn.request("GET", "/v1/function/list", { Authorization: `Bearer ${token}` });
        expect(next.status).toBe(200);
        expect(JSON.parse(next.body)).toEqual([expect.objectContaining({ name: "ka" })]);
      } finally {
        conn.close();
      }
    });
});
