import type { SQL } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { runBatch, type Db } from "../db/client.js";
import { envelope, pageOffset, type PageRequest } from "../http/paginate.js";
import type { Envelope } from "../../shared/schemas/common.js";
import { replaceLinks } from "./tags.js";

/** The fields of a partial edit that were given: PATCH leaves absent fields alone. */
export function given<T extends Record<string, unknown>>(fields: T): Partial<T> {
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/** Applies a record's column update and its new tag list (when given) as one atomic batch. */
export async function saveEdit(db: Db, recordId: string, update: BatchItem<"sqlite"> | undefined, tagIds: string[] | undefined): Promise<void> {
  await runBatch(db, [...(update ? [update] : []), ...(tagIds ? replaceLinks(db, recordId, tagIds) : [])]);
}

/** One page of a list and the envelope around it: the total and the page are read together. */
export async function listPage<T>(db: Db, table: SQLiteTable, where: SQL | undefined, req: PageRequest, rows: (limit: number, offset: number) => Promise<T[]>): Promise<Envelope<T>> {
  const [total, items] = await Promise.all([db.$count(table, where), rows(req.limit, pageOffset(req))]);
  return envelope(req, total, items);
}
