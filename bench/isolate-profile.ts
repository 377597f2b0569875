/**
 * Where workerd's CPU goes, isolate by isolate: V8's sampling profiler, through workerd's inspector
 * (serve-worker.ts opens it on GCFAAS_INSPECTOR_PORT), on every isolate of the local host at once:
 * the Worker (the API and its Durable Objects share one isolate), Miniflare's entry worker (the
 * local-only hop every request takes) and local D1 (the database object that runs each query).
 *
 * Samples, not milliseconds: workerd samples an isolate only while it holds the isolate's lock, so
 * the time deltas between samples are not the time spent (they include other isolates' turns);
 * sample counts in busy frames are comparable across isolates and frames. The Worker's frames are
 * mapped through the bundle's source map to the repository's files.
 */
import fs from "node:fs";
import { SourceMap } from "node:module";
import path from "node:path";
import WebSocket from "ws";

interface CallFrame { functionName: string; url: string; lineNumber: number; columnNumber: number }
interface ProfileNode { id: number; callFrame: CallFrame; children?: number[] }
interface Profile { nodes: ProfileNode[]; samples: number[] }

/** Frames V8 names for time in no JavaScript function: waiting, the engine's own work, GC. */
const IDLE = "(idle)";

export interface IsolateSamples {
  isolate: string;
  /** Samples that were not idle (JavaScript, the engine's own work, garbage collection). */
  busy: number;
  /** Busy samples by the innermost frame's place: a repository file for the Worker, else the frame's name. */
  bySelf: Map<string, number>;
}

class InspectorSession {
  private next = 0;
  private readonly pending = new Map<number, (v: unknown) => void>();
  private constructor(private readonly ws: WebSocket) {
    ws.on("message", (d) => {
      const m = JSON.parse(String(d)) as { id?: number; result?: unknown; error?: unknown };
      const done = m.id === undefined ? undefined : this.pending.get(m.id);
      if (done) {
        this.pending.delete(m.id!);
        done(m.result ?? m.error);
      }
    });
  }
  static async open(url: string): Promise<InspectorSession> {
    // A long run's profile is tens of megabytes of JSON.
    const ws = new WebSocket(url, { maxPayload: 1 << 30 });
    await new Promise((resolve, reject) => {
      ws.once("open", resolve);
      ws.once("error", reject);
    });
    return new InspectorSession(ws);
  }
  send<T>(method: string, params: object = {}): Promise<T> {
    const id = ++this.next;
    return new Promise((resolve) => {
      this.pending.set(id, resolve as (v: unknown) => void);
      this.ws.send(JSON.stringify({ id, method, params }));
    });
  }
  close(): void {
    this.ws.close();
  }
}

/** Maps the bundle's generated positions to `worker/…` files (or the package a frame came from). */
function placeFinder(bundleDir: string): (f: CallFrame) => string {
  const mapFile = path.join(bundleDir, "index.js.map");
  const map = fs.existsSync(mapFile) ? new SourceMap(JSON.parse(fs.readFileSync(mapFile, "utf8"))) : undefined;
  return (f) => {
    if (!f.url.endsWith("index.js") || !map) return f.functionName || "(anonymous)";
    const e = map.findEntry(f.lineNumber, f.columnNumber) as { originalSource?: string };
    const src = e.originalSource ?? "?";
    // drizzle-orm's own source maps name its files ../src/…, which resolve to node_modules/src.
    if (src.includes("node_modules/src/")) return "package drizzle-orm";
    const pkg = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(src);
    return pkg ? `package ${pkg[1]}` : src.replace(/^.*?\/(worker|shared)\//, "$1/");
  };
}

/**
 * Profiles every isolate whose inspector id matches `pick` while `fn` runs. `bundleDir` holds the
 * Worker's bundle and its source map (serve-worker.ts writes them to `<state dir>/bundle`).
 */
export async function profileIsolates(inspectorPort: number, bundleDir: string, pick: RegExp, fn: () => Promise<unknown>, intervalUs = 500): Promise<IsolateSamples[]> {
  const targets = (await (await fetch(`http://127.0.0.1:${inspectorPort}/json/list`)).json()) as { id: string; webSocketDebuggerUrl: string }[];
  const sessions = await Promise.all(targets.filter((t) => pick.test(t.id)).map(async (t) => ({ isolate: t.id, s: await InspectorSession.open(t.webSocketDebuggerUrl) })));
  try {
    for (const { s } of sessions) {
      await s.send("Profiler.enable");
      await s.send("Profiler.setSamplingInterval", { interval: intervalUs });
      await s.send("Profiler.start");
    }
    await fn();
    const place = placeFinder(bundleDir);
    const out: IsolateSamples[] = [];
    for (const { isolate, s } of sessions) {
      const { profile } = await s.send<{ profile: Profile }>("Profiler.stop");
      const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
      const bySelf = new Map<string, number>();
      let busy = 0;
      for (const id of profile.samples) {
        const f = frames.get(id)!;
        if (f.functionName === IDLE) continue;
        busy++;
        const k = place(f);
        bySelf.set(k, (bySelf.get(k) ?? 0) + 1);
      }
      out.push({ isolate, busy, bySelf });
    }
    return out;
  } finally {
    for (const { s } of sessions) s.close();
  }
}
