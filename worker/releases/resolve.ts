import { and, eq, isNotNull, or, sql, type SQL, type SQLWrapper } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { releases } from "../db/schema.js";

/**
 * What "a successful build" means for running and releasing, as a condition on the row of
 * `builds` under `alias`: one place, so that the newest build, a pin, a canary and a rollback all
 * agree. A build whose artifact was evicted (worker/limits/artifact-eviction.ts) can run no more.
 */
export const isRunnable = (alias: "b" | "builds") => sql.raw(`${alias}.status = 'SUCCESS' and ${alias}.evicted_at is null`);
/** isRunnable() of the build aliased `b` in the subqueries below. */
export const RUNNABLE = isRunnable("b");

/** The newest runnable build of the `functions` row in scope: what an unpinned function runs. */
export const newestBuild = sql<string | null>`(select b.id from builds b where b.function_id = "functions"."id" and ${RUNNABLE} order by b.id desc limit 1)`;

/**
 * The build a new task of the `functions` row in scope runs, as a scalar subquery for the
 * statements that issue tasks (services/admission.ts): the canary build for `canary_weight`
 * percent of evaluations, else the pinned build, else (no release row, or not pinned) the newest.
 * It reads the release by primary key inside the issuing statement, so following a release costs
 * no round trip. random() is drawn per evaluation: each task rolls its own die. (`% 100` before
 * abs(): abs() of the smallest 64-bit integer overflows.)
 */
export const releasedBuild = sql<string | null>`coalesce(
  (select case when r.canary_build_id is not null and abs(random() % 100) < r.canary_weight then r.canary_build_id else r.build_id end
     from releases r where r.function_id = "functions"."id"),
  ${newestBuild})`;

/**
 * The builds a function's release protects from artifact eviction: the pinned build and the
 * canary build (none when the function follows its newest build without a canary). For the
 * eviction that keeps a function's last successful builds: these are kept on top of those.
 */
export async function protectedBuildIds(db: Db, functionId: string): Promise<string[]> {
  const [row] = await db
    .select({ buildId: releases.buildId, canaryBuildId: releases.canaryBuildId })
    .from(releases)
    .where(and(eq(releases.functionId, functionId), or(isNotNull(releases.buildId), isNotNull(releases.canaryBuildId))));
  return row ? [row.buildId, row.canaryBuildId].filter((id): id is string => id != null) : [];
}

/**
 * protectedBuildIds() as a SQL condition on a build's function and id (columns or values), for an
 * eviction written as one statement: read by the release's primary key.
 */
export const isProtectedBuild = (functionId: SQLWrapper | string, buildId: SQLWrapper | string): SQL =>
  sql`exists (select 1 from releases pr where pr.function_id = ${functionId} and (pr.build_id = ${buildId} or pr.canary_build_id = ${buildId}))`;
