import type { Envelope } from "../../shared/schemas/common.js";

export interface PageRequest {
  page: number;
  limit: number;
}

/** Offset of a page, for `LIMIT ? OFFSET ?`. */
export const pageOffset = ({ page, limit }: PageRequest) => (page - 1) * limit;

/** The specification's envelope: pageCount = ceil(total / limit); a page past the end is empty. */
export function envelope<T>(req: PageRequest, totalCount: number, results: T[]): Envelope<T> {
  return { pageCount: Math.ceil(totalCount / req.limit), pageSize: req.limit, totalCount, results };
}
