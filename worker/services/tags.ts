import { and, asc, eq, inArray, desc, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { chunks, type Db } from "../db/client.js";
import { tagLinks, tags } from "../db/schema.js";
import { notFound, validationFailed } from "../errors.js";
import { newId } from "../lib/ids.js";
import { DEFAULT_TAG_COLOR, type TagCreate, type TagEdit } from "../../shared/schemas/tag.js";
import type { TagOut } from "../../shared/schemas/common.js";

/** Every id must be one of the caller's tags; otherwise 400 naming the first unknown one. */
export async function assertOwnTags(db: Db, accountId: string, ids: string[] | undefined): Promise<void> {
  if (!ids?.length) return;
  const found = new Set<string>();
  for (const part of chunks(ids)) {
    const rows = await db.select({ id: tags.id }).from(tags).where(and(eq(tags.accountId, accountId), inArray(tags.id, part)));
    for (const r of rows) found.add(r.id);
  }
  const missing = ids.findIndex((id) => !found.has(id));
  if (missing >= 0) throw validationFailed([{ field: `tag[${missing}]`, message: `no tag ${ids[missing]} in this account` }]);
}

/**
 * Statements that replace the tags of one record, keeping the caller's order. A link row binds
 * three parameters and D1 binds at most 100 a statement, so the rows go in slices of 33.
 */
export function replaceLinks(db: Db, recordId: string, ids: string[]): BatchItem<"sqlite">[] {
  const stmts: BatchItem<"sqlite">[] = [db.delete(tagLinks).where(eq(tagLinks.recordId, recordId))];
  const rows = ids.map((tagId, position) => ({ recordId, tagId, position }));
  for (const part of chunks(rows, 33)) stmts.push(db.insert(tagLinks).values(part));
  return stmts;
}

export const unlinkRecords = (db: Db, recordIds: string[]) =>
  chunks(recordIds).map((part) => db.delete(tagLinks).where(inArray(tagLinks.recordId, part)));

/** Tag objects of many records at once, in each record's own order. */
export async function tagsOf(db: Db, recordIds: string[]): Promise<Map<string, TagOut[]>> {
  const out = new Map<string, TagOut[]>(recordIds.map((id) => [id, []]));
  for (const part of chunks([...new Set(recordIds)])) {
    if (!part.length) continue;
    const rows = await db
      .select({ recordId: tagLinks.recordId, id: tags.id, name: tags.name, color: tags.color })
      .from(tagLinks)
      .innerJoin(tags, eq(tags.id, tagLinks.tagId))
      .where(inArray(tagLinks.recordId, part))
      .orderBy(asc(tagLinks.recordId), asc(tagLinks.position));
    for (const { recordId, ...tag } of rows) out.get(recordId)?.push(tag);
  }
  return out;
}

/** 404 unless the tag is the caller's (list filters name a tag that must exist). */
export async function getOwnTags(db: Db, accountId: string, id: string) {
  const [row] = await db.select().from(tags).where(and(eq(tags.id, id), eq(tags.accountId, accountId)));
  if (!row) throw notFound("tag");
  return row;
}

export async function createTag(db: Db, accountId: string, input: TagCreate): Promise<string> {
  const id = newId();
  await db.insert(tags).values({ id, accountId, name: input.name, color: input.color ?? DEFAULT_TAG_COLOR, createdAt: Date.now() });
  return id;
}

export const listTags = (db: Db, accountId: string) =>
  db.select({ id: tags.id, name: tags.name, color: tags.color }).from(tags).where(eq(tags.accountId, accountId)).orderBy(desc(tags.id));

export async function editTag(db: Db, accountId: string, id: string, input: TagEdit): Promise<void> {
  const set: Partial<typeof tags.$inferInsert> = {};
  if (input.name !== undefined) set.name = input.name;
  if (input.color !== undefined) set.color = input.color;
  const where = and(eq(tags.id, id), eq(tags.accountId, accountId));
  const res = Object.keys(set).length
    ? await db.update(tags).set(set).where(where).returning({ id: tags.id })
    : await db.select({ id: tags.id }).from(tags).where(where);
  if (!res.length) throw notFound("tag");
}

/** Deleting a tag detaches it from every function, trigger and endpoint (links cascade). */
export async function deleteTag(db: Db, accountId: string, id: string): Promise<void> {
  const [, res] = await db.batch([
    db.delete(tagLinks).where(
      and(eq(tagLinks.tagId, id), sql`exists (select 1 from ${tags} where ${tags.id} = ${id} and ${tags.accountId} = ${accountId})`),
    ),
    db.delete(tags).where(and(eq(tags.id, id), eq(tags.accountId, accountId))).returning({ id: tags.id }),
  ]);
  if (!res.length) throw notFound("tag");
}

