import { and, desc, eq, sql } from "drizzle-orm";
import { sqlBatch, type Db } from "../db/client.js";
import { builds } from "../db/schema.js";
import { readEnds } from "../build-logs/ends.js";
import { buildLogText } from "../build-logs/text.js";
import { endsAsLog } from "../../shared/build-log.js";
import { notFound } from "../errors.js";
import type { PageRequest } from "../http/paginate.js";
import { listPage } from "./records.js";
import { iso } from "../lib/time.js";
import type { BuildStatus } from "../../shared/schemas/build.js";
import { getOwnFunction } from "./functions.js";
import { limitReached } from "../limits/account-limits.js";
import { insertWithin } from "../limits/insert-within.js";

export type BuildRow = typeof builds.$inferSelect;

/** The account's builds that are queued or running (read through the partial index builds_account_open). */
const openBuilds = (accountId: string) => sql`select count(*) from ${builds} where ${builds.accountId} = ${accountId} and ${builds.status} in ('PENDING', 'BUILDING')`;

/** 429 limit_reached when the account already has `queuedBuilds` builds queued or running. */
export async function assertBuildRoom(db: Db, accountId: string, queuedBuilds: number): Promise<void> {
  const [[row]] = (await sqlBatch(db, [sql`select (${openBuilds(accountId)}) as n`])) as [Record<string, unknown>[]];
  if (Number(row?.n ?? 0) >= queuedBuilds) throw limitReached("queuedBuilds", queuedBuilds);
}

/**
 * Records a new PENDING build, unless the account's queued or running builds reached
 * `queuedBuilds` meanwhile (429; the caller deletes the stored zip).
 */
export async function recordBuild(
  db: Db,
  b: { id: string; accountId: string; functionId: string; lang: string; zipKey: string; zipSize: number },
  queuedBuilds: number,
  now = Date.now(),
): Promise<BuildRow> {
  const values = { ...b, status: "PENDING" as const, arch: ["amd64"], timeline: [{ status: "PENDING", time: iso(now)! }], createdAt: now };
  const row = await insertWithin(db, builds, values, openBuilds(b.accountId), queuedBuilds);
  if (!row) throw limitReached("queuedBuilds", queuedBuilds);
  return row;
}

export async function getOwnBuild(db: Db, accountId: string, id: string): Promise<BuildRow> {
  const [row] = await db.select().from(builds).where(and(eq(builds.id, id), eq(builds.accountId, accountId)));
  if (!row) throw notFound("build");
  return row;
}

export async function describeBuild(db: Db, accountId: string, id: string) {
  const b = await getOwnBuild(db, accountId, id);
  const ends = await readEnds(db, id);
  return {
    id: b.id,
    functionId: b.functionId,
    status: b.status as BuildStatus,
    arch: b.arch,
    timeline: b.timeline,
    log: endsAsLog(ends),
    logLines: ends.lines,
    createdAt: iso(b.createdAt),
    evictedAt: iso(b.evictedAt),
  };
}

/** GET /v1/build/<id>/log: the caller's build's whole log as text (bounded, build-logs/text.ts). */
export async function readBuildLog(db: Db, bucket: R2Bucket, accountId: string, id: string): Promise<string> {
  return buildLogText(db, bucket, await getOwnBuild(db, accountId, id));
}

export async function listBuilds(db: Db, accountId: string, filter: PageRequest & { functionId?: string | undefined }) {
  if (filter.functionId) await getOwnFunction(db, accountId, filter.functionId);
  const where = and(eq(builds.accountId, accountId), filter.functionId ? eq(builds.functionId, filter.functionId) : undefined);
  const page = await listPage(db, builds, where, filter, (limit, offset) =>
    db
      .select({ id: builds.id, functionId: builds.functionId, status: builds.status, createdAt: builds.createdAt })
      .from(builds)
      .where(where)
      .orderBy(desc(builds.id))
      .limit(limit)
      .offset(offset),
  );
  return { ...page, results: page.results.map((r) => ({ ...r, createdAt: iso(r.createdAt) })) };
}
