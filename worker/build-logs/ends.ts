import { asc, count, desc, eq } from "drizzle-orm";
import type { Db } from "../db/client.js";
import { buildLogEnds, legacyBuildLogs } from "../db/schema.js";
import { appendToEnds, BUILD_LOG_HEAD_LINES, BUILD_LOG_TAIL_LINES, emptyEnds, type LogEnds } from "../../shared/build-log.js";

/** D1 side of a build's log: the one row of its first and last lines (shared/build-log.ts). */

export async function readEnds(db: Db, buildId: string): Promise<LogEnds> {
  const [row] = await db.select().from(buildLogEnds).where(eq(buildLogEnds.buildId, buildId));
  if (row) return { head: row.head, tail: row.tail, lines: row.lines };
  return legacyEnds(db, buildId);
}

export async function writeEnds(db: Db, buildId: string, ends: LogEnds): Promise<void> {
  await db
    .insert(buildLogEnds)
    .values({ buildId, ...ends })
    .onConflictDoUpdate({ target: buildLogEnds.buildId, set: { head: ends.head, tail: ends.tail, lines: ends.lines } });
}

/**
 * A build recorded before build_log_ends kept a row per line: its ends are read from those rows,
 * through the same bounds, so old and new builds show the same shape.
 */
async function legacyEnds(db: Db, buildId: string): Promise<LogEnds> {
  const where = eq(legacyBuildLogs.buildId, buildId);
  const [total] = await db.select({ n: count() }).from(legacyBuildLogs).where(where);
  const n = total?.n ?? 0;
  if (!n) return emptyEnds();
  const line = { line: legacyBuildLogs.line };
  const head = await db.select(line).from(legacyBuildLogs).where(where).orderBy(asc(legacyBuildLogs.seq)).limit(BUILD_LOG_HEAD_LINES);
  const tailCount = Math.min(BUILD_LOG_TAIL_LINES, n - head.length);
  const tail = tailCount > 0 ? (await db.select(line).from(legacyBuildLogs).where(where).orderBy(desc(legacyBuildLogs.seq)).limit(tailCount)).reverse() : [];
  const ends = appendToEnds(emptyEnds(), 0, head.map((r) => r.line));
  return appendToEnds(ends, n - tail.length, tail.map((r) => r.line));
}

/** A legacy build's whole log, at most `maxBytes` of lines, read a page of rows at a time. */
export async function legacyText(db: Db, buildId: string, maxBytes: number): Promise<{ lines: string[]; cut: number } | undefined> {
  const where = eq(legacyBuildLogs.buildId, buildId);
  const [total] = await db.select({ n: count() }).from(legacyBuildLogs).where(where);
  const n = total?.n ?? 0;
  if (!n) return undefined;
  const lines: string[] = [];
  let bytes = 0;
  for (let offset = 0; offset < n; offset += 1000) {
    const page = await db.select({ line: legacyBuildLogs.line }).from(legacyBuildLogs).where(where).orderBy(asc(legacyBuildLogs.seq)).limit(1000).offset(offset);
    for (const { line } of page) {
      bytes += new TextEncoder().encode(line).length + 1;
      if (bytes > maxBytes) return { lines, cut: n - lines.length };
      lines.push(line);
    }
  }
  return { lines, cut: 0 };
}
