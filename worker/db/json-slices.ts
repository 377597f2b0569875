/**
 * D1's limits a statement keeps to (issue 26): 100 bound parameters (a json_each statement binds one)
 * and 100 KB a statement, of which this much is left to the JSON of the rows.
 */
export const MAX_STATEMENT_JSON_BYTES = 90_000;

/**
 * Items as JSON arrays of at most `maxBytes` each: the one parameter of a `json_each` statement,
 * kept under D1's 100 KB a statement however many items there are. An item larger than the limit
 * gets an array of its own (D1 then refuses it, loudly, rather than anything being dropped).
 */
export function jsonSlices(items: unknown[], maxBytes = MAX_STATEMENT_JSON_BYTES): string[] {
  const out: string[] = [];
  let part: string[] = [];
  let bytes = 2;
  for (const item of items) {
    const e = JSON.stringify(item);
    if (part.length && bytes + e.length + 1 > maxBytes) {
      out.push(`[${part.join(",")}]`);
      part = [];
      bytes = 2;
    }
    part.push(e);
    bytes += e.length + 1;
  }
  if (part.length) out.push(`[${part.join(",")}]`);
  return out;
}
