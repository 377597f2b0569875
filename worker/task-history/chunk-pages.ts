import type { TaskRow } from "../db/rows.js";
import { segmentIndexOf, type Segments } from "../db/archive-segments.js";
import { Recent } from "../lib/recent.js";
import { OpenChunk, readSegmentOf } from "./chunk.js";

/** An archive page's query: the account's records, or a function's of the account, newest id first. */
export interface ArchivedQuery {
  accountId: string;
  functionId?: string | undefined;
  /** Ids below this only (the list's `before`). */
  before?: string | undefined;
  /** Ids above this only: a full page of live records needs nothing older than its oldest. */
  above?: string | undefined;
  limit: number;
}

/** A chunk as its index names it: where it is in R2, and the segments its index row holds. */
export interface IndexedChunk {
  key: string;
  segments: Segments;
  lastId: string;
  /** Its name among those kept read: must change whenever its bytes do (retention's rewrite). */
  name: string;
}

/**
 * The gzip bytes of the last chunks read, ~0.1–0.2 MB each, and the records last decoded from
 * their segments, by weight: a segment decoded for a function's list keeps only the lines that
 * name the function, so a list of a function that is a twentieth of its chunks keeps the records
 * of its first page of 100 (40 segments) where whole segments would have kept 16. 800 records is
 * ~1.8 MB of the benchmark's, and about 10 MB with every payload inline at its 4 KiB.
 */
const OPEN_CHUNKS = 8;
const DECODED_RECORDS = 800;

/**
 * Pages and reads by id over archived chunks, for D1's archive (reads.ts: one per isolate) and a
 * shard's (shard-history/archive.ts: one per shard), with what they keep of the chunks they read.
 */
export class ChunkPages {
  private readonly opened = new Recent<OpenChunk>(OPEN_CHUNKS);
  private readonly decoded = new Recent<TaskRow[]>(DECODED_RECORDS, (rows) => rows.length);

  /**
   * The segment of a chunk that would hold `id`: from its bytes if they are kept, else one ranged
   * read of it alone. Kept either way, under the segment's place, which retention's rewrite does
   * not move (it keeps every record, in order).
   */
  segmentHolding(bucket: R2Bucket, chunk: IndexedChunk, id: string): Promise<TaskRow[]> {
    const open = this.opened.peek(chunk.name);
    const i = segmentIndexOf(open?.segments ?? chunk.segments, id);
    if (i < 0) return Promise.resolve([]);
    return this.decoded.get(`${chunk.name}|${i}|`, () => (open ? open.records(i) : readSegmentOf(bucket, chunk.key, chunk.segments, id)));
  }

  /**
   * A page of the query's records in these chunks, newest id first. Chunks are read newest last id
   * first, and each chunk's segments newest first. The walk stops once a full page's oldest id is
   * above all that is left unread (or `above` is): the next chunk's last id, or within a chunk the
   * key of the segment just read. So a page decodes the segments it draws from, not whole chunks,
   * and of those parses only the lines that name its function (or its account).
   */
  async page(bucket: R2Bucket, chunks: Iterable<IndexedChunk> | AsyncIterable<IndexedChunk>, q: ArchivedQuery): Promise<TaskRow[]> {
    const mention = q.functionId ?? q.accountId;
    const fits = (r: TaskRow) => r.accountId === q.accountId && (!q.functionId || r.functionId === q.functionId) && (!q.before || r.id < q.before) && (!q.above || r.id > q.above);
    let page: TaskRow[] = [];
    const full = () => page.length >= q.limit;
    for await (const chunk of chunks) {
      if (q.above !== undefined && chunk.lastId <= q.above) break;
      if (full() && page[q.limit - 1]!.id > chunk.lastId) break;
      const open = await this.opened.get(chunk.name, () => OpenChunk.read(bucket, chunk.key, chunk.segments));
      for (let i = open.segments.length - 1; i >= 0; i--) {
        const from = open.segments[i]![0];
        if (q.before !== undefined && from >= q.before) continue;
        const fitting = (await this.decoded.get(`${chunk.name}|${i}|${mention}`, () => open.records(i, mention))).filter(fits);
        // A record kept again may be in two chunks: the page holds it once.
        if (fitting.length) page = [...new Map([...page, ...fitting].map((r) => [r.id, r])).values()].sort((a, b) => (a.id < b.id ? 1 : -1)).slice(0, q.limit);
        if ((full() && page[q.limit - 1]!.id >= from) || (q.above !== undefined && from <= q.above)) break;
      }
    }
    return page;
  }
}
