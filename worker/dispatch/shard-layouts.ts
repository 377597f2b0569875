import { z } from "zod";

/**
 * DISPATCH_SHARDS as a history of layouts: `"4"`, or, once the count has changed,
 * `"8 from 2026-12-01T00:00:00Z, 4"` (each later count with the instant it took over; one count
 * without an instant, the first). A task lives in the shard its id names under the layout in force
 * at the id's time, so a change re-homes functions from its instant on but never loses the way to a
 * task made before it: its reads, its counts and (once the shards hold the records alone) its
 * history still reach the shard that has it. Choose the instant a few minutes after the deploy, so
 * that every isolate runs the new list before the layout changes.
 */
export interface ShardLayout {
  /** The first millisecond it is in force; the first layout's is -Infinity. */
  from: number;
  shards: number;
}

const count = z.coerce.number().int().min(1).max(256);
const instant = z.iso.datetime({ offset: true });

const entry = z
  .string()
  .trim()
  .transform((text, ctx): { shards: number; from?: number } => {
    const [n, word, at, ...rest] = text.split(/\s+/);
    const shards = count.safeParse(n);
    if (!shards.success) {
      ctx.addIssue({ code: "custom", message: `"${text}": a count is a whole number from 1 to 256` });
      return z.NEVER;
    }
    if (word === undefined) return { shards: shards.data };
    const when = instant.safeParse(at);
    if (word !== "from" || !when.success || rest.length) {
      ctx.addIssue({ code: "custom", message: `"${text}": write a later count as "<count> from <ISO 8601 instant>", e.g. "8 from 2026-12-01T00:00:00Z"` });
      return z.NEVER;
    }
    return { shards: shards.data, from: Date.parse(when.data) };
  });

const layouts = z
  .string()
  .transform((s) => s.split(","))
  .pipe(z.array(entry))
  .transform((entries, ctx): ShardLayout[] => {
    const first = entries.filter((e) => e.from === undefined);
    if (first.length !== 1) {
      ctx.addIssue({ code: "custom", message: "exactly one count has no instant: the first layout" });
      return z.NEVER;
    }
    const later = entries.flatMap((e) => (e.from === undefined ? [] : [{ from: e.from, shards: e.shards }])).sort((a, b) => a.from - b.from);
    if (later.some((l, i) => i > 0 && later[i - 1]!.from === l.from)) {
      ctx.addIssue({ code: "custom", message: "two counts take over at the same instant" });
      return z.NEVER;
    }
    return [{ from: -Infinity, shards: first[0]!.shards }, ...later];
  });

const parsed = new Map<string, ShardLayout[]>();

/**
 * The layouts, oldest first. A value that does not parse is refused loudly (every task route then
 * fails with the reason in the log): guessing a count would send tasks to shards their reads and
 * agents do not look in.
 */
export function shardLayouts(raw: string | undefined): ShardLayout[] {
  const text = raw ?? "1";
  let known = parsed.get(text);
  if (!known) {
    const result = layouts.safeParse(text);
    if (!result.success) throw new Error(`DISPATCH_SHARDS is invalid: ${result.error.issues.map((i) => i.message).join("; ")}`);
    known = result.data;
    parsed.set(text, known);
  }
  return known;
}

/** The shard count in force at `ms`. */
export function shardsAt(all: ShardLayout[], ms: number): number {
  let n = all[0]!.shards;
  for (const l of all) if (l.from <= ms) n = l.shards;
  return n;
}

/** Every shard any layout names: the ones that may hold work, and that agents serve. */
export const shardsInUse = (all: ShardLayout[]): number => Math.max(...all.map((l) => l.shards));
