import { ok } from "../api-client.js";
import { idOf, type ApplyContext, type Change } from "./change.js";
import { keyOfDescription, stackMarker, type StackFunction } from "./schema.js";
import type { EndpointRecord, FunctionState, ScheduleRecord, TriggerRecord } from "./service-state.js";

interface Keyed<R extends { id: string }> {
  /** Records `up` made, by the file's key (kept at the start of their description). */
  byKey: Map<string, R>;
  /** The rest: made otherwise, or a second record of one key. */
  others: R[];
}

function byKey<R extends { id: string; description: string }>(records: readonly R[]): Keyed<R> {
  const out: Keyed<R> = { byKey: new Map(), others: [] };
  // Oldest first, so that of two records of one key the older one stays the file's.
  for (const r of [...records].sort((a, b) => (a.id < b.id ? -1 : 1))) {
    const key = keyOfDescription(r.description);
    if (key !== undefined && !out.byKey.has(key)) out.byKey.set(key, r);
    else out.others.push(r);
  }
  return out;
}

const DELETE_PATH = { endpoint: "/v1/endpoint/{id}", schedule: "/v1/scheduled/{id}", trigger: "/v1/trigger/{id}" } as const;

/** What the file does not mention: left alone, or deleted with --prune. */
function extras(kind: "endpoint" | "schedule" | "trigger", fn: string, records: readonly { id: string }[], prune: boolean): Change[] {
  return records.map((r) =>
    prune
      ? { verb: "delete", kind, fn, key: r.id, id: r.id, apply: (run: ApplyContext) => ok(run.api.DELETE(DELETE_PATH[kind], { params: { path: { id: r.id } } })).then(() => undefined) }
      : { verb: "leave", kind, fn, key: r.id, id: r.id, detail: "not in the file (--prune deletes it)" },
  );
}

const sameJson = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const originKey = (o: string) => new URL(o).origin;

export function planEndpoints(name: string, decl: StackFunction, state: FunctionState | undefined, prune: boolean): Change[] {
  const { byKey: existing, others } = byKey<EndpointRecord>(state?.endpoints ?? []);
  const changes: Change[] = [];
  for (const [key, e] of Object.entries(decl.endpoints ?? {})) {
    const body = { description: stackMarker(key, e.description), dailyLimit: e.dailyLimit ?? -1, origin: e.origin ?? [], ip: e.ip ?? [], timeLimit: e.timeLimit ?? null };
    const have = existing.get(key);
    existing.delete(key);
    if (!have) {
      changes.push({
        verb: "create",
        kind: "endpoint",
        fn: name,
        key,
        async apply(run) {
          const { id } = await ok(run.api.POST("/v1/endpoint/{id}", { params: { path: { id: idOf(run, name) } }, body }));
          return `${run.api.baseUrl}/gc/${id}`;
        },
      });
      continue;
    }
    const differs = [
      body.description !== have.description && "description",
      body.dailyLimit !== have.dailyLimit && "dailyLimit",
      !sameJson(body.origin.map(originKey).sort(), have.origin.map(originKey).sort()) && "origin",
      !sameJson([...body.ip].sort(), [...have.ip].sort()) && "ip",
      !sameJson(body.timeLimit, have.timeLimit) && "timeLimit",
    ].filter((d): d is string => Boolean(d));
    if (differs.length === 0) changes.push({ verb: "unchanged", kind: "endpoint", fn: name, key, id: have.id });
    else changes.push({ verb: "update", kind: "endpoint", fn: name, key, id: have.id, detail: differs.join(", "), apply: (run) => ok(run.api.PATCH("/v1/endpoint/{id}", { params: { path: { id: have.id } }, body })).then(() => undefined) });
  }
  return [...changes, ...extras("endpoint", name, [...existing.values(), ...others], prune)];
}

export function planSchedules(name: string, decl: StackFunction, state: FunctionState | undefined, prune: boolean): Change[] {
  const { byKey: existing, others } = byKey<ScheduleRecord>(state?.schedules ?? []);
  const changes: Change[] = [];
  for (const [key, s] of Object.entries(decl.schedules ?? {})) {
    const want = { active: s.active, cron: s.cron, timezone: s.timezone, description: stackMarker(key, s.description) };
    const have = existing.get(key);
    existing.delete(key);
    if (!have) {
      changes.push({
        verb: "create",
        kind: "schedule",
        fn: name,
        key,
        detail: `${s.cron} (${s.timezone})${s.active ? "" : ", inactive"}`,
        async apply(run) {
          const { id } = await ok(run.api.POST("/v1/scheduled", { body: { functionId: idOf(run, name), cron: want.cron, timezone: want.timezone, description: want.description } }));
          if (!want.active) await ok(run.api.PATCH("/v1/scheduled/{id}", { params: { path: { id } }, body: want }));
          return id;
        },
      });
      continue;
    }
    const differs = (Object.keys(want) as (keyof typeof want)[]).filter((k) => want[k] !== have[k]);
    if (differs.length === 0) changes.push({ verb: "unchanged", kind: "schedule", fn: name, key, id: have.id });
    else changes.push({ verb: "update", kind: "schedule", fn: name, key, id: have.id, detail: differs.join(", "), apply: (run) => ok(run.api.PATCH("/v1/scheduled/{id}", { params: { path: { id: have.id } }, body: want })).then(() => undefined) });
  }
  return [...changes, ...extras("schedule", name, [...existing.values(), ...others], prune)];
}

/**
 * Triggers are told apart by their next function and status (two triggers alike in both would
 * issue the same task twice); `next` is a function of the file or one the account already has.
 */
export function planTriggers(name: string, decl: StackFunction, state: FunctionState | undefined, nextIds: ReadonlyMap<string, string>, prune: boolean): Change[] {
  const left = new Set<TriggerRecord>(state?.triggers ?? []);
  const changes: Change[] = [];
  for (const t of decl.triggers ?? []) {
    const key = `${t.next}/${t.status}`;
    const nextId = nextIds.get(t.next);
    const have = nextId ? [...left].find((r) => r.nextId === nextId && r.status === t.status) : undefined;
    if (!have) {
      const body = (run: ApplyContext) => ({ functionId: idOf(run, name), nextId: nextIds.get(t.next) ?? idOf(run, t.next), status: t.status, includeResult: t.includeResult, ...(t.description !== undefined ? { description: t.description } : {}) });
      changes.push({
        verb: "create",
        kind: "trigger",
        fn: name,
        key,
        async apply(run) {
          return (await ok(run.api.POST("/v1/trigger", { body: body(run) }))).id;
        },
      });
      continue;
    }
    left.delete(have);
    const want = { includeResult: t.includeResult, ...(t.description !== undefined ? { description: t.description } : {}) };
    const differs = (Object.keys(want) as (keyof typeof want)[]).filter((k) => want[k] !== have[k]);
    if (differs.length === 0) changes.push({ verb: "unchanged", kind: "trigger", fn: name, key, id: have.id });
    else changes.push({ verb: "update", kind: "trigger", fn: name, key, id: have.id, detail: differs.join(", "), apply: (run) => ok(run.api.PATCH("/v1/trigger/{id}", { params: { path: { id: have.id } }, body: want })).then(() => undefined) });
  }
  return [...changes, ...extras("trigger", name, [...left], prune)];
}
