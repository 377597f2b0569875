import http from "node:http";
import type net from "node:net";
import type { FunctionRequest, ShimResponse } from "./types.js";

export type { ShimResponse };

export class ResponseTooLargeError extends Error {}

const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "content-length", "host", "te", "trailer", "proxy-connection"]);
export const INVOCATION_HEADER = "x-gcfaas-invocation";
/**
 * The call's environment variables and secrets, base64 of a JSON object, set by the runner on every
 * call (a caller's header of this name never reaches the shim); each shim sets them in its
 * process environment before the handler runs and takes the header off the event.
 */
export const ENV_HEADER = "x-gcfaas-env";

export function requestTarget(request: FunctionRequest): string {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(request.query)) {
    for (const v of Array.isArray(value) ? value : [value]) params.append(key, v);
  }
  const search = params.toString();
  const pathname = request.path && request.path.startsWith("/") ? request.path : `/${request.path ?? ""}`;
  return search ? `${pathname}?${search}` : pathname;
}

/**
 * One HTTP/1.1 exchange with a shim over a connection it opened to the runner's channel (see
 * shim-channel.ts), used for this call only: a fresh connection cannot inherit a half-read response.
 */
export function exchangeOver(socket: net.Socket, request: FunctionRequest, invocationId: string, maxBytes: number, env: Record<string, string> = {}): Promise<ShimResponse> {
  const body = typeof request.body === "string" ? Buffer.from(request.body, "utf8") : request.body;
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(request.headers)) {
    const lower = name.toLowerCase();
    if (!HOP_BY_HOP.has(lower) && lower !== INVOCATION_HEADER && lower !== ENV_HEADER) headers[lower] = value;
  }
  headers["host"] = request.headers["host"] ?? request.headers["Host"] ?? "localhost";
  headers["content-length"] = String(body.length);
  headers["connection"] = "close";
  headers[INVOCATION_HEADER] = invocationId;
  headers[ENV_HEADER] = Buffer.from(JSON.stringify(env)).toString("base64");
  return new Promise((resolve, reject) => {
    const req = http.request(
      // maxHeaderSize: a response may set GC-Storage, up to 1 MiB base64-encoded in one header.
      { createConnection: () => socket, method: request.method.toUpperCase(), path: requestTarget(request), headers, maxHeaderSize: 4 * 1024 * 1024 },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > maxBytes) {
            res.destroy(new ResponseTooLargeError(`response body exceeds ${maxBytes} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on("error", reject);
        res.on("end", () => {
          const out: Record<string, string> = {};
          for (const [name, value] of Object.entries(res.headers)) {
            if (value === undefined || name === "connection" || name === "content-length") continue;
            out[name] = Array.isArray(value) ? value.join(", ") : value;
          }
          resolve({ status: res.statusCode ?? 500, headers: out, body: Buffer.concat(chunks) });
        });
      },
    );
    req.on("error", reject);
    // One write for head and body (see platform notes on Nagle); unix sockets have no Nagle, TCP would.
    req.end(body);
  });
}
