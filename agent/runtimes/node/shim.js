// gcfaas Node.js shim: loads /function/handler.js once and serves one request at a time over
// connections it opens to the runner's unix socket in GCFAAS_SOCKET (the runner listens, the shim
// connects out, one connection per call). Protocol shared by all shims: see docs/runtimes.md.
// Pool mode (GCFAAS_POOL=1): the container starts with an empty /function; its first request is the
// init (a body of GCFAAS_NAME=value lines), after which calls are served.
// Configuration: every call carries X-Gcfaas-Env, base64 of a JSON object of the function's
// environment variables and secrets, set in process.env before the handler runs (and taken off
// the event). The handler loads at the first call, after they are set: a module that reads
// process.env when it loads sees them, and a container serves one configuration for its life.
"use strict";
const http = require("node:http");
const net = require("node:net");
const os = require("node:os");
const path = require("node:path");

const FUNCTION_DIR = process.env.GCFAAS_FUNCTION_DIR || "/function";
const SOCKET_PATH = process.env.GCFAAS_SOCKET || "/run/gcfaas/agent.sock";
const INVOCATION_HEADER = "x-gcfaas-invocation";
const ENV_HEADER = "x-gcfaas-env";

let handle = null;
let loadError = null;
let loaded = false;
// The environment the container started with: a name the configuration no longer sets goes back to it.
const baselineEnv = { ...process.env };
let appliedEnv = [];

/** Sets the call's configuration in process.env, undoing names an earlier call set and this one does not. */
function applyEnv(encoded) {
  let config = {};
  try {
    const parsed = encoded ? JSON.parse(Buffer.from(encoded, "base64").toString("utf8")) : {};
    if (parsed && typeof parsed === "object" && !Array.isArray(parsed)) config = parsed;
  } catch {
    config = {};
  }
  for (const name of appliedEnv) {
    if (Object.hasOwn(config, name)) continue;
    if (Object.hasOwn(baselineEnv, name)) process.env[name] = baselineEnv[name];
    else delete process.env[name];
  }
  for (const [name, value] of Object.entries(config)) process.env[name] = String(value);
  appliedEnv = Object.keys(config);
}

function ensureLoaded() {
  if (loaded) return;
  loaded = true;
  loadHandler();
}
let awaitingInit = process.env.GCFAAS_POOL === "1";

function loadHandler() {
  try {
    const mod = require(path.join(FUNCTION_DIR, "handler.js"));
    handle = typeof mod === "function" ? mod : mod && typeof mod.handle === "function" ? mod.handle : null;
    if (!handle) loadError = "handler.js must export a function: module.exports = async (event, context) => ...";
  } catch (err) {
    // A failing load must not end the shim: every call reports it, so it lands in the task log.
    loadError = err && err.stack ? err.stack : String(err);
  }
}

/** Pool mode's first request: the function's variables, set before its code loads. */
function takeInit(body) {
  for (const line of body.toString("utf8").split("\n")) {
    const at = line.indexOf("=");
    if (at > 0 && line.startsWith("GCFAAS_")) process.env[line.slice(0, at)] = line.slice(at + 1);
  }
  awaitingInit = false;
}

function parseQuery(search) {
  const query = {};
  for (const [key, value] of new URLSearchParams(search)) {
    const previous = query[key];
    if (previous === undefined) query[key] = value;
    else query[key] = Array.isArray(previous) ? [...previous, value] : [previous, value];
  }
  return query;
}

function encodeBody(body) {
  if (body === undefined || body === null) return [Buffer.alloc(0), null];
  if (Buffer.isBuffer(body) || body instanceof Uint8Array) return [Buffer.from(body), "application/octet-stream"];
  if (typeof body === "string") return [Buffer.from(body, "utf8"), "text/plain; charset=utf-8"];
  return [Buffer.from(JSON.stringify(body), "utf8"), "application/json"];
}

function isResponse(value) {
  if (!value || typeof value !== "object" || Array.isArray(value) || Buffer.isBuffer(value)) return false;
  const keys = Object.keys(value);
  return keys.includes("statusCode") && keys.every((k) => ["statusCode", "headers", "body"].includes(k));
}

function toResponse(value) {
  let status = 200;
  let headers = {};
  let body = value;
  if (isResponse(value)) {
    status = Number(value.statusCode);
    if (!Number.isInteger(status) || status < 100 || status > 599) {
      throw new Error(`statusCode must be an integer between 100 and 599, got ${value.statusCode}`);
    }
    headers = { ...(value.headers || {}) };
    body = value.body;
  }
  const [bytes, contentType] = encodeBody(body);
  if (contentType && !Object.keys(headers).some((k) => k.toLowerCase() === "content-type")) {
    headers["Content-Type"] = contentType;
  }
  return { status, headers, body: bytes };
}

function failure(message) {
  return { status: 500, headers: { "Content-Type": "application/json" }, body: Buffer.from(JSON.stringify({ error: message })) };
}

async function runHandler(event, context) {
  if (!handle) {
    console.error(loadError);
    return failure("handler failed to load");
  }
  try {
    return toResponse(await handle(event, context));
  } catch (err) {
    console.error(err && err.stack ? err.stack : err);
    return failure(err && err.message ? err.message : String(err));
  }
}

// A rejection or exception escaping the handler's own promise chain must not end the warm container.
process.on("unhandledRejection", (err) => console.error(err && err.stack ? err.stack : err));
process.on("uncaughtException", (err) => console.error(err && err.stack ? err.stack : err));

// The connection waits for its call as long as the container stays warm: no server timeouts.
// maxHeaderSize: GC-Storage values (up to 1 MiB) arrive base64-encoded in one header.
const server = http.createServer({ requestTimeout: 0, headersTimeout: 0, maxHeaderSize: 4 * 1024 * 1024 }, (req, res) => {
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", async () => {
    if (awaitingInit) {
      takeInit(Buffer.concat(chunks));
      res.writeHead(204, { "Content-Length": "0", Connection: "close" });
      res.end();
      return;
    }
    const url = new URL(req.url, "http://function");
    const headers = { ...req.headers };
    const invocation = String(headers[INVOCATION_HEADER] || "");
    delete headers[INVOCATION_HEADER];
    applyEnv(String(headers[ENV_HEADER] || ""));
    delete headers[ENV_HEADER];
    ensureLoaded();
    // The exact bytes the caller sent (files, images, anything); `body` is them as text.
    const rawBody = Buffer.concat(chunks);
    const text = rawBody.toString("utf8");
    const event = {
      method: req.method,
      path: url.pathname,
      query: parseQuery(url.search),
      headers,
      body: text,
      rawBody,
      get json() {
        try {
          return text ? JSON.parse(text) : undefined;
        } catch {
          return undefined;
        }
      },
    };
    const context = {
      requestId: invocation,
      functionId: process.env.GCFAAS_FUNCTION_ID || "",
      buildId: process.env.GCFAAS_BUILD_ID || "",
      timeout: Number(process.env.GCFAAS_TIMEOUT || 0),
      memoryMiB: Number(process.env.GCFAAS_MEMORY_MIB || 0),
      hostname: os.hostname(),
    };
    const result = await runHandler(event, context);
    const marker = `\x1eGCFAAS_END:${invocation}\x1e\n`;
    // Writes to pipes are synchronous on Linux, so the marker follows everything the handler logged.
    process.stdout.write(marker);
    process.stderr.write(marker);
    const outHeaders = {};
    for (const [k, v] of Object.entries(result.headers)) {
      if (!["content-length", "connection", "transfer-encoding"].includes(k.toLowerCase())) outHeaders[k] = String(v);
    }
    outHeaders["Content-Length"] = String(result.body.length);
    outHeaders["Connection"] = "close";
    res.writeHead(result.status, outHeaders);
    // end() with the body sends head and body in one write.
    res.end(result.body);
  });
});

// The server never listens: each connection to the runner is handed to it as if accepted, and the
// next one is opened as soon as the previous call's connection closes.
function connect() {
  const socket = net.connect(SOCKET_PATH);
  let connected = false;
  socket.once("connect", () => {
    connected = true;
    server.emit("connection", socket);
  });
  socket.once("close", () => {
    if (connected) connect();
  });
  socket.once("error", (err) => {
    if (connected) return;
    console.error(`shim: cannot reach the runner (${err.code || "error"})`);
    process.exit(1);
  });
}
connect();
