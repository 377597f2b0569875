import { and, desc, eq, inArray, isNull } from "drizzle-orm";
import { chunks, type Db } from "../db/client.js";
import { builds } from "../db/schema.js";
import type { StoreBindings } from "../bindings.js";
import { limitsOf } from "./account-limits.js";
import { artifactKey } from "../lib/storage-keys.js";
import { protectedBuildIds } from "../releases/resolve.js";

/** A finished build as eviction sees it. */
export interface FinishedBuild {
  id: string;
  status: string;
  zipKey: string;
  artifactKey: string | null;
}

/**
 * The one rule of which finished builds keep their objects in R2: the newest `keep` successful
 * builds, plus every protected one (a release's pinned or canary build, whatever its age).
 * Everything else finished gives its objects back: older successful builds, and failed
 * builds, whose zip nothing reads once their log is written. `newestFirst` is in id order.
 */
export function buildsToKeep(newestFirst: Pick<FinishedBuild, "id" | "status">[], keep: number, protectedIds: ReadonlySet<string>): Set<string> {
  const kept = new Set<string>();
  let successes = 0;
  for (const b of newestFirst) {
    if (protectedIds.has(b.id)) kept.add(b.id);
    else if (b.status === "SUCCESS" && successes < keep) kept.add(b.id);
    if (b.status === "SUCCESS") successes++;
  }
  return kept;
}

/** R2 deletes at most 1,000 keys a call. */
const R2_DELETE_KEYS = 1000;

/**
 * Deletes the zips and artifacts of a function's finished builds beyond its account's
 * `artifactsKept`, and marks their records evicted (`evicted_at`, the artifact key cleared); the
 * records themselves stay readable. Runs after each build of the function ends; idempotent, so
 * two builds ending together do no harm. Returns the ids evicted.
 */
export async function evictArtifacts(env: Pick<StoreBindings, "ACCOUNT_LIMITS" | "BUCKET">, db: Db, accountId: string, functionId: string, now = Date.now()): Promise<string[]> {
  const { artifactsKept } = await limitsOf(env, db, accountId);
  const finished = await db
    .select({ id: builds.id, status: builds.status, zipKey: builds.zipKey, artifactKey: builds.artifactKey })
    .from(builds)
    .where(and(eq(builds.functionId, functionId), inArray(builds.status, ["SUCCESS", "FAILED"]), isNull(builds.evictedAt)))
    .orderBy(desc(builds.id));
  const kept = buildsToKeep(finished, artifactsKept, new Set(await protectedBuildIds(db, functionId)));
  const evicted = finished.filter((b) => !kept.has(b.id));
  if (!evicted.length) return [];
  // The artifact's own key whatever the record says: a build that failed after its upload left one.
  const keys = evicted.flatMap((b) => [b.zipKey, b.artifactKey ?? artifactKey(accountId, functionId, b.id)]);
  // Objects first: a record marked evicted must never point at bytes still stored (nothing would free them).
  for (const part of chunks(keys, R2_DELETE_KEYS)) await env.BUCKET.delete(part);
  for (const ids of chunks(evicted.map((b) => b.id))) await db.update(builds).set({ evictedAt: now, artifactKey: null }).where(inArray(builds.id, ids));
  return evicted.map((b) => b.id);
}
