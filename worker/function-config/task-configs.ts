import { eq } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { functionConfig } from "../db/schema.js";
import type { TaskConfig } from "../../shared/schemas/function-config.js";
import { FRAME_BUDGET_BYTES } from "../../shared/protocol/messages.js";
import { openSecret } from "./secret-box.js";

/**
 * How much opened configuration a dispatcher keeps in memory (characters of JSON, about bytes),
 * the least recently used function's dropped first: at most 64 of the largest, thousands of the usual.
 */
const MAX_CACHED_CHARS = 8 * 1024 * 1024;

/**
 * A dispatcher's memory of its functions' configurations, secrets opened: never written to the
 * object's storage, so an eviction or a restart forgets them and the next assignment reads D1
 * again. The API tells the dispatcher of every change (`changed`) before it answers, so a task
 * assigned after the answer carries the new configuration.
 */
export class TaskConfigs {
  private readonly entries = new Map<string, { config: TaskConfig; chars: number }>();
  private chars = 0;
  /** Bumped by every change: a load that began before one must not store what it read. */
  private changes = 0;

  constructor(private readonly load: (functionId: string) => Promise<TaskConfig>) {}

  cached(functionId: string): TaskConfig | undefined {
    const e = this.entries.get(functionId);
    if (e) {
      this.entries.delete(functionId);
      this.entries.set(functionId, e);
    }
    return e?.config;
  }

  async fetch(functionId: string): Promise<TaskConfig> {
    const before = this.changes;
    const c = await this.load(functionId);
    if (this.changes === before) {
      this.forget(functionId);
      const chars = JSON.stringify(c).length;
      this.entries.set(functionId, { config: c, chars });
      this.chars += chars;
      while (this.chars > MAX_CACHED_CHARS) this.forget(this.entries.keys().next().value!);
    }
    return c;
  }

  changed(functionId: string): void {
    this.changes += 1;
    this.forget(functionId);
  }

  private forget(functionId: string): void {
    const e = this.entries.get(functionId);
    if (!e) return;
    this.entries.delete(functionId);
    this.chars -= e.chars;
  }
}

const isEmpty = (c: TaskConfig) => Object.keys(c.env).length === 0 && Object.keys(c.secrets).length === 0;
const encoder = new TextEncoder();

/**
 * A task.assign frame (serialized when queued) with the configuration spliced in, as it goes out.
 * When the frame would pass the protocol's budget, the input goes by its URL instead of inline;
 * undefined when even that does not fit (the API's limits keep this from happening).
 */
export function withConfig(frame: string, config: TaskConfig): string | undefined {
  if (isEmpty(config) || !frame.endsWith("}")) return frame;
  const out = `${frame.slice(0, -1)},"config":${JSON.stringify(config)}}`;
  // UTF-8 takes at most 3 bytes a UTF-16 unit: short frames need no count.
  if (out.length * 3 <= FRAME_BUDGET_BYTES || encoder.encode(out).byteLength <= FRAME_BUDGET_BYTES) return out;
  const smaller = JSON.stringify({ ...JSON.parse(out), input: null });
  return encoder.encode(smaller).byteLength <= FRAME_BUDGET_BYTES ? smaller : undefined;
}

/**
 * What a task of the function is given: its variables, and its secrets opened. Only the
 * dispatcher calls this, as it sends an assignment; the result lives in memory only.
 */
export async function taskConfigOf(db: Db, key: string | undefined, functionId: string): Promise<TaskConfig> {
  const rows = await db.select().from(functionConfig).where(eq(functionConfig.functionId, functionId));
  const config: TaskConfig = { env: {}, secrets: {} };
  for (const r of rows) {
    if (r.kind === "env") config.env[r.name] = r.value;
    else config.secrets[r.name] = await openSecret(key, functionId, r.name, r.value);
  }
  return config;
}
