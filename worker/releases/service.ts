import { and, eq, inArray, sql, type SQL } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { builds, functions, releases } from "../db/schema.js";
import { ApiError, notFound, validationFailed } from "../errors.js";
import type { Release, ReleaseSet } from "../../shared/schemas/release.js";
import { noSuccessfulBuild } from "../tasks/admission.js";
import { isRunnable, newestBuild, RUNNABLE } from "./resolve.js";

/** The release of one of the caller's functions, with the newest runnable build beside it, in one read. */
async function readRelease(db: Db, accountId: string, functionId: string) {
  const [row] = await db
    .select({ pinned: releases.buildId, canaryBuildId: releases.canaryBuildId, canaryWeight: releases.canaryWeight, newest: newestBuild })
    .from(functions)
    .leftJoin(releases, eq(releases.functionId, functions.id))
    .where(and(eq(functions.id, functionId), eq(functions.accountId, accountId)));
  if (!row) throw notFound("function");
  return row;
}

export async function getRelease(db: Db, accountId: string, functionId: string): Promise<Release> {
  const r = await readRelease(db, accountId, functionId);
  return {
    buildId: r.pinned ?? r.newest,
    pinned: r.pinned != null,
    canary: r.canaryBuildId != null && r.canaryWeight != null ? { buildId: r.canaryBuildId, weight: r.canaryWeight } : null,
  };
}

/**
 * Each build named must be a successful build of this function: one that is not the caller's (or
 * does not exist) is 404, as any other account's record; one of another function or not (yet)
 * successful is 409 build_not_ready.
 */
async function assertReleasable(db: Db, accountId: string, functionId: string, ids: string[]): Promise<void> {
  if (!ids.length) return;
  const found = await db
    .select({ id: builds.id, functionId: builds.functionId, status: builds.status, runnable: sql<number>`${isRunnable("builds")}` })
    .from(builds)
    .where(and(eq(builds.accountId, accountId), inArray(builds.id, ids)));
  for (const id of ids) {
    const b = found.find((f) => f.id === id);
    if (!b) throw notFound(`build ${id}`);
    if (b.functionId !== functionId) throw new ApiError("build_not_ready", `build ${id} is a build of function ${b.functionId}, not of this function`);
    if (!b.runnable) throw new ApiError("build_not_ready", `build ${id} is ${b.status}: only a successful build can be released`);
  }
}

type ReleaseValues = { buildId: SQL | string | null; canaryBuildId: string | null; canaryWeight: number | null };

/**
 * Writes one of the caller's functions' release whole, as an insert-select from its row: nothing
 * is written for a function that is not the caller's, or gone since it was read (a plain insert
 * would fail its foreign key then), nor when `when` does not hold. The pin it wrote, or undefined.
 */
async function writeRelease(db: Db, accountId: string, functionId: string, r: ReleaseValues, now: number, when?: SQL): Promise<{ buildId: string | null } | undefined> {
  const [row] = await db
    .insert(releases)
    .select(
      db
        .select({
          functionId: functions.id,
          accountId: functions.accountId,
          buildId: sql`${r.buildId}`.as("build_id"),
          canaryBuildId: sql`${r.canaryBuildId}`.as("canary_build_id"),
          canaryWeight: sql`${r.canaryWeight}`.as("canary_weight"),
          updatedAt: sql`${now}`.as("updated_at"),
        })
        .from(functions)
        .where(and(eq(functions.id, functionId), eq(functions.accountId, accountId), when)),
    )
    .onConflictDoUpdate({
      target: releases.functionId,
      set: { buildId: sql`excluded.build_id`, canaryBuildId: sql`excluded.canary_build_id`, canaryWeight: sql`excluded.canary_weight`, updatedAt: now },
    })
    .returning({ buildId: releases.buildId });
  return row;
}

export async function setRelease(db: Db, accountId: string, functionId: string, input: ReleaseSet, now = Date.now()): Promise<void> {
  const current = await readRelease(db, accountId, functionId);
  const canary = input.canary ?? null;
  await assertReleasable(db, accountId, functionId, [...new Set([input.buildId, canary?.buildId].filter((id): id is string => id != null))]);
  // Following the newest with the newest as canary would send it every task: a mistake to name.
  if (canary && input.buildId == null && canary.buildId === current.newest)
    throw validationFailed([{ field: "canary.buildId", message: "is the newest build, which already runs: pin another build first" }]);
  const written = await writeRelease(db, accountId, functionId, { buildId: input.buildId, canaryBuildId: canary?.buildId ?? null, canaryWeight: canary?.weight ?? null }, now);
  if (!written) throw notFound("function");
}

/**
 * Pins the successful build before the one that runs now and drops any canary: a rollback goes
 * back to one known build. One statement reads what runs and writes the pin, so two rollbacks at
 * once go back two builds, not the same one twice. 404 for another account's function; 409 when
 * nothing runs yet or no successful build precedes it.
 */
export async function rollback(db: Db, accountId: string, functionId: string, now = Date.now()): Promise<Release> {
  const running = sql`coalesce((select r.build_id from releases r where r.function_id = "functions"."id"), ${newestBuild})`;
  const previous = sql`(select b.id from builds b where b.function_id = "functions"."id" and ${RUNNABLE} and b.id < ${running} order by b.id desc limit 1)`;
  const row = await writeRelease(db, accountId, functionId, { buildId: previous, canaryBuildId: null, canaryWeight: null }, now, sql`${previous} is not null`);
  if (row?.buildId) return { buildId: row.buildId, pinned: true, canary: null };
  const r = await readRelease(db, accountId, functionId);
  const runs = r.pinned ?? r.newest;
  if (!runs) throw noSuccessfulBuild();
  throw new ApiError("no_previous_build", `no successful build precedes build ${runs}, the one that runs now`);
}
