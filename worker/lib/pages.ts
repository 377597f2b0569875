/**
 * Pages of records merged by id, newest first, the first `limit`; where two carry the same id, the
 * later list's copy wins (ids sort by creation, so this is the order one store alone would give).
 */
export function mergedPage<T extends { id: string }>(first: T[], later: T[], limit: number): T[] {
  const byId = new Map(first.map((r) => [r.id, r]));
  for (const r of later) byId.set(r.id, r);
  return [...byId.values()].sort((a, b) => (a.id < b.id ? 1 : a.id > b.id ? -1 : 0)).slice(0, limit);
}
