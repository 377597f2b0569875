import fs from "node:fs/promises";
import net from "node:net";
import path from "node:path";
import { log } from "../log.js";
import { exchangeOver, type ShimResponse } from "./shim-client.js";
import type { FunctionRequest } from "./types.js";

/** The socket's name in the container's /run/gcfaas, also given to the shim as GCFAAS_SOCKET. */
export const CHANNEL_SOCKET = "agent.sock";
/** The shim holds one connection; one more covers its reconnect racing the old one's close. */
const MAX_WAITING_CONNECTIONS = 4;

interface Waiter<T> {
  resolve: (value: T) => void;
  reject: (err: Error) => void;
}

export class ChannelClosed extends Error {
  constructor() {
    super("the shim channel is closed");
  }
}

/**
 * The runner's end of one container's channel to its shim. The agent listens on a unix socket in a
 * folder of its own (root-owned, not writable by the function, mounted read-only), and the shim
 * connects out to it, one connection per call. The runner never opens a path the function can
 * change: it only accepts on the socket it created, so a function cannot point it at anything else
 * (another tenant's container, a host socket), and nothing the function writes reaches the host disk.
 */
export class ShimChannel {
  private readonly waiting: net.Socket[] = [];
  private readonly wanted: Waiter<net.Socket>[] = [];
  private readonly readyWaiters: Waiter<void>[] = [];
  private closed = false;

  private constructor(
    private readonly server: net.Server,
    readonly dir: string,
  ) {
    server.on("connection", (socket) => this.accept(socket));
  }

  /** Creates `dir` (which must not exist) with the listening socket in it. */
  static async open(dir: string): Promise<ShimChannel> {
    await fs.mkdir(dir, { mode: 0o755 });
    // Whatever runs the agent, the folder belongs to root: nobody else may add or replace entries.
    await fs.chown(dir, 0, 0);
    const server = net.createServer();
    const socketPath = path.join(dir, CHANNEL_SOCKET);
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(socketPath, () => {
        server.off("error", reject);
        resolve();
      });
    });
    // The shim runs as the function's uid: it needs write permission on the socket to connect.
    await fs.chmod(socketPath, 0o666);
    server.on("error", (err) => log("warn", "shim channel listener failed", { dir, error: err.message }));
    return new ShimChannel(server, dir);
  }

  /** Whether the shim is connected and waiting for a call. */
  get ready(): boolean {
    return this.waiting.length > 0;
  }

  /** Resolves when the shim has connected (it does so once its handler is loaded). */
  whenReady(): Promise<void> {
    if (this.closed) return Promise.reject(new ChannelClosed());
    if (this.ready) return Promise.resolve();
    return new Promise((resolve, reject) => this.readyWaiters.push({ resolve, reject }));
  }

  /** One call over the shim's next connection. */
  async exchange(request: FunctionRequest, invocationId: string, maxBytes: number, env?: Record<string, string>): Promise<ShimResponse> {
    const socket = await this.next();
    return exchangeOver(socket, request, invocationId, maxBytes, env);
  }

  /** Stops listening, drops every connection and fails whoever waits for one. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const socket of this.waiting.splice(0)) socket.destroy();
    for (const w of [...this.wanted.splice(0), ...this.readyWaiters.splice(0)]) w.reject(new ChannelClosed());
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
    await fs.rm(this.dir, { recursive: true, force: true });
  }

  private next(): Promise<net.Socket> {
    if (this.closed) return Promise.reject(new ChannelClosed());
    const socket = this.waiting.shift();
    if (socket) return Promise.resolve(socket);
    return new Promise((resolve, reject) => this.wanted.push({ resolve, reject }));
  }

  private accept(socket: net.Socket): void {
    // An idle connection's errors surface when it is used; until then they must not be unhandled.
    socket.on("error", () => undefined);
    if (this.closed) {
      socket.destroy();
      return;
    }
    const wanted = this.wanted.shift();
    if (wanted) {
      wanted.resolve(socket);
      return;
    }
    if (this.waiting.length >= MAX_WAITING_CONNECTIONS) {
      // Only the function itself can open more: it may starve its own calls, nobody else's.
      socket.destroy();
      return;
    }
    this.waiting.push(socket);
    for (const w of this.readyWaiters.splice(0)) w.resolve();
    socket.once("close", () => {
      const at = this.waiting.indexOf(socket);
      if (at !== -1) this.waiting.splice(at, 1);
    });
  }
}
