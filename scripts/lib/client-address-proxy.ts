import http from "node:http";
import net from "node:net";

/**
 * The local server's front door. Cloudflare sets `CF-Connecting-IP` from the connection and
 * overwrites whatever a client sent; Miniflare only fills it in when the client sent none, so a
 * caller could claim any address and pass an endpoint's `ip` rule. This proxy listens on the
 * public port, drops what a client sent (that header, `X-Forwarded-For`, `X-Forwarded-Proto`,
 * Miniflare's own `MF-*` control headers) and sets `CF-Connecting-IP` to the address the request
 * really came from.
 */

/** The address as a Worker sees it in production: IPv4 without the IPv6-mapped prefix. */
const plain = (address: string) => address.replace(/^::ffff:(\d+\.\d+\.\d+\.\d+)$/, "$1");

/**
 * Who is calling: the connection's address; or, when that is a trusted proxy (a load balancer the
 * operator runs in front), the nearest `X-Forwarded-For` hop that is not itself a trusted proxy.
 * Hops further left were written by the client and prove nothing.
 */
export function clientAddress(remote: string, forwardedFor: string | undefined, trusted: ReadonlySet<string>): string {
  let address = plain(remote);
  if (!trusted.has(address) || !forwardedFor) return address;
  const hops = forwardedFor.split(",").map((h) => plain(h.trim()));
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!;
    if (net.isIP(hop) === 0) return address;
    address = hop;
    if (!trusted.has(hop)) return hop;
  }
  return address;
}

/**
 * Whether the client spoke https to a TLS-terminating proxy in front: only a trusted proxy's
 * `X-Forwarded-Proto` counts, and of a list only the last entry, the one that proxy wrote
 * (those before it may be the client's own). Anyone else's header proves nothing.
 */
export function forwardedHttps(remote: string, forwardedProto: string | undefined, trusted: ReadonlySet<string>): boolean {
  if (!trusted.has(plain(remote)) || !forwardedProto) return false;
  return forwardedProto.split(",").at(-1)!.trim().toLowerCase() === "https";
}

/** `GCFAAS_TRUSTED_PROXIES`: comma-separated addresses whose `X-Forwarded-For` and `X-Forwarded-Proto` are believed. */
export const trustedProxiesFrom = (value: string | undefined): Set<string> =>
  new Set((value ?? "").split(",").map((a) => plain(a.trim())).filter((a) => net.isIP(a) !== 0));

/** `Expect: 100-continue` is answered here (Node sends the 100), so workerd gets the body at once. */
const DROPPED = /^(cf-connecting-ip|x-forwarded-for|x-forwarded-proto|mf-.*|connection|keep-alive|proxy-connection|expect)$/i;

/** The client's headers as the Worker must see them: raw pairs, names in their original case. */
function upstreamHeaders(req: http.IncomingMessage, trusted: ReadonlySet<string>, keep: RegExp | null): string[] {
  const out: string[] = [];
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (!DROPPED.test(raw[i]!) || keep?.test(raw[i]!)) out.push(raw[i]!, raw[i + 1]!);
  const forwarded = req.headers["x-forwarded-for"];
  const remote = req.socket.remoteAddress ?? "";
  out.push("CF-Connecting-IP", clientAddress(remote, Array.isArray(forwarded) ? forwarded.join(",") : forwarded, trusted));
  // The Worker then sees the URL the client used, as it does on Cloudflare: its console cookie is
  // Secure and its Origin checks compare with the https origin. Miniflare's entry worker takes
  // the request's URL from this header (and removes it); a client's own MF-* headers are dropped.
  const proto = req.headers["x-forwarded-proto"];
  if (req.headers.host && forwardedHttps(remote, Array.isArray(proto) ? proto.join(",") : proto, trusted))
    out.push("MF-Original-URL", `https://${req.headers.host}${req.url ?? "/"}`);
  return out;
}

export interface FrontDoor {
  server: http.Server;
  close(): Promise<void>;
}

/** Listens on `host:port` and hands every request and WebSocket upgrade to `upstream`. */
export async function startFrontDoor(o: {
  host: string;
  port: number;
  upstream: URL;
  trustedProxies: ReadonlySet<string>;
  /** Answers a request itself instead of passing it on when it returns true (tests' controls). */
  control?: (req: http.IncomingMessage, res: http.ServerResponse) => boolean;
}): Promise<FrontDoor> {
  const target = { host: o.upstream.hostname, port: Number(o.upstream.port) };
  // One connection per request: workerd closes a kept-alive connection when it answered without
  // reading the whole body (a refused call), and a request sent on it meanwhile would be lost.
  const agent = new http.Agent({ keepAlive: false });
  const server = http.createServer((req, res) => {
    if (o.control?.(req, res)) return;
    const up = http.request({ ...target, agent, method: req.method, path: req.url, headers: upstreamHeaders(req, o.trustedProxies, null) }, (answer) => {
      const headers = answer.rawHeaders.filter((_, i, all) => !/^(connection|keep-alive)$/i.test(all[i - (i % 2)]!));
      res.writeHead(answer.statusCode ?? 502, answer.statusMessage, headers);
      answer.pipe(res);
    });
    let clientLeft = false;
    up.on("error", (err) => {
      // Dropping the upstream request because its client hung up is no error of anyone's.
      if (clientLeft) return;
      console.error(`[front door] ${req.method} ${req.url}: ${err.message}`);
      if (res.headersSent) res.destroy();
      else res.writeHead(502).end();
    });
    res.on("close", () => {
      if (res.writableFinished) return;
      clientLeft = true;
      up.destroy();
    });
    req.pipe(up);
  });
  // A long poll holds a request for up to 30 s and an upload may take long: no proxy timeouts.
  server.requestTimeout = 0;
  server.on("upgrade", (req: http.IncomingMessage, socket: net.Socket, head: Buffer) => {
    const up = net.connect(target.port, target.host, () => {
      const headers = upstreamHeaders(req, o.trustedProxies, /^connection$/i);
      let lines = `${req.method} ${req.url} HTTP/1.1\r\n`;
      for (let i = 0; i < headers.length; i += 2) lines += `${headers[i]}: ${headers[i + 1]}\r\n`;
      up.write(`${lines}\r\n`);
      if (head.length) up.write(head);
      socket.pipe(up).pipe(socket);
    });
    up.on("error", () => socket.destroy());
    socket.on("error", () => up.destroy());
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(o.port, o.host, resolve);
  });
  return {
    server,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        agent.destroy();
        server.close(() => resolve());
      }),
  };
}
