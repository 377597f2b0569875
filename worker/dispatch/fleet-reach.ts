import { gte, sql } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { nodes } from "../db/schema.js";
import type { AgentState } from "./agents.js";

/** A node seen within this long may come back; past it, the fleet is taken not to have it. */
export const SEEN_WITHIN_MS = 24 * 3_600_000;
/** How stale a shard's copy of the nodes table may be before a verdict reads it again. */
const REFRESH_MS = 60_000;

/** What a task needs of a node that never changes while it waits. */
export interface Needs {
  lang: string;
  privileged: boolean;
  egress: boolean;
}

/** What a node serves, as the needs above ask it. */
export interface SeenNode {
  langs: string[];
  privileged: boolean;
  egress: boolean;
}

/** A queue row's needs (its flags are stored as 0 or 1). */
export const needsOf = (w: { lang: string; privileged: number | boolean; egress: number | boolean }): Needs => ({ lang: w.lang, privileged: !!w.privileged, egress: !!w.egress });
export const needsKey = (n: Needs) => `${n.lang}/${n.privileged}/${n.egress}`;

/** The permissions a need asks of a node beyond its language, with how a verdict names the missing one. */
const PERMISSIONS = [
  { need: "privileged", what: "privileged work" },
  { need: "egress", what: "network egress" },
] as const;

/**
 * What the fleet could ever serve, for the rule "a task that no node seen in the last 24 hours
 * could take fails at once instead of waiting" (docs/security.md). A shard asks it only about work
 * that none of its connected agents could take, so the usual task costs a loop over those agents
 * and no storage; the nodes table is read at most once a minute, and a node's hello counts at once.
 *
 * A fleet that never had a node (a new installation, before its first agent) gives no verdict:
 * its tasks wait for that agent. Disabled nodes do not count: they take no work until resumed.
 */
export class FleetReach {
  private seen = new Map<string, SeenNode>();
  /** Whether the nodes table has any row at all (see above). */
  private anyNode = false;
  private loadedAt = -Infinity;
  private loading: Promise<void> | undefined;
  /**
   * Needs found reachable, by key, and when. A node that could take them was seen then, so the
   * answer holds for a day; it is asked again after REFRESH_MS only so that a disabled node stops
   * counting. Under load (every agent busy, tasks waiting) this spares each enqueue the agents.
   */
  private reachable = new Map<string, number>();

  constructor(private readonly db: Db) {}

  /** A node said hello to this shard. */
  saw(nodeId: string, node: SeenNode): void {
    this.seen.set(nodeId, { langs: node.langs, privileged: node.privileged, egress: node.egress });
    this.anyNode = true;
  }

  /** The next verdict reads the nodes table again (the hourly sweep; tests that edit the table). */
  forget(): void {
    this.loadedAt = -Infinity;
    this.reachable.clear();
  }

  /** Why no node could ever take work with these needs, or null when one could (or may yet). */
  async unreachable(needs: Needs, connected: () => AgentState[], now: number): Promise<string | null> {
    const key = needsKey(needs);
    if (now - (this.reachable.get(key) ?? -Infinity) < REFRESH_MS) return null;
    const reason = await this.judge(needs, connected, now);
    if (reason === null) this.reachable.set(key, now);
    return reason;
  }

  private async judge(needs: Needs, connected: () => AgentState[], now: number): Promise<string | null> {
    if (connected().some((a) => serves(a, needs))) return null;
    if (now - this.loadedAt > REFRESH_MS) await this.refresh(now);
    if (!this.anyNode || [...this.seen.values()].some((n) => serves(n, needs))) return null;
    return whyNot([...this.seen.values()], needs);
  }

  private async refresh(now: number): Promise<void> {
    this.loading ??= this.load(now).finally(() => (this.loading = undefined));
    await this.loading;
  }

  private async load(now: number): Promise<void> {
    const [recent, [any]] = await this.db.batch([
      this.db.select({ id: nodes.id, langs: nodes.langs, privileged: nodes.privileged, egress: nodes.egress, disabled: nodes.disabled }).from(nodes).where(gte(nodes.lastSeen, now - SEEN_WITHIN_MS)),
      this.db.select({ n: sql<number>`count(*)` }).from(nodes),
    ]);
    this.seen = new Map(recent.filter((r) => !r.disabled).map((r) => [r.id, { langs: r.langs, privileged: r.privileged, egress: r.egress }]));
    this.anyNode = (any?.n ?? 0) > 0;
    this.loadedAt = now;
  }
}

const serves = (n: SeenNode, needs: Needs) => n.langs.includes(needs.lang) && PERMISSIONS.every((p) => !needs[p.need] || n[p.need]);

/**
 * The reason none of `seen` serves `needs`, naming what is missing: the language, else the one
 * permission no node of the language has, else the combination.
 */
function whyNot(seen: SeenNode[], needs: Needs): string {
  const ofLang = seen.filter((n) => n.langs.includes(needs.lang));
  if (!ofLang.length) return `no node seen in the last 24 hours serves the language ${needs.lang}`;
  const asked = PERMISSIONS.filter((p) => needs[p.need]);
  const missing = asked.find((p) => !ofLang.some((n) => n[p.need]));
  const what = missing ? missing.what : `${asked.map((p) => p.what).join(" and ")} on one node`;
  return `no node seen in the last 24 hours allows ${what}`;
}
