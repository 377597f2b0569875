import { z } from "zod";

/** Record ids: lowercase alphanumeric, time-ordered (see worker/lib/ids.ts). */
export const recordId = z
  .string({ error: "must be a string" })
  .regex(/^[a-z0-9]{1,64}$/, "must be a record id (lowercase letters and digits)");

/** "Alphanumeric" in the specification: [A-Za-z0-9], 1–64 characters. */
export const alphanumeric = z
  .string({ error: "must be a string" })
  .regex(/^[A-Za-z0-9]{1,64}$/, "must be 1 to 64 letters or digits");

/** Printable ASCII (0x20–0x7E) of at most `max` characters; empty allowed. */
export const printableAscii = (max: number) =>
  z
    .string({ error: "must be a string" })
    .max(max, `at most ${max} characters`)
    .regex(/^[\x20-\x7e]*$/, "must be printable ASCII");

/** Tag names: printable ASCII, 1–64 characters. */
export const tagName = z
  .string({ error: "must be a string" })
  .regex(/^[\x20-\x7e]{1,64}$/, "must be 1 to 64 printable ASCII characters");

export const hexColor = z
  .string({ error: "must be a string" })
  .regex(/^#[0-9a-fA-F]{6}$/, "must be a hex color #rrggbb")
  .transform((c) => c.toLowerCase());

/**
 * A `tag` array on input: unique alphanumeric tag ids. The specification's samples send tag
 * objects, so `{id, ...}` is accepted too and reduced to its id.
 */
export const tagRefs = z
  .array(
    z.union([alphanumeric, z.looseObject({ id: alphanumeric })], {
      error: "must be a tag id or a tag object with an id",
    }),
    { error: "must be an array of tag ids" },
  )
  .max(64, "at most 64 tags")
  .transform((refs) => refs.map((r) => (typeof r === "string" ? r : r.id)))
  .refine((ids) => new Set(ids).size === ids.length, "tag ids must be unique");

/** An array whose items are unique by `key` (items that differ only in spelling can share a key). */
export const unique = <T extends z.ZodTypeAny>(item: T, what: string, max = 100, key: (x: z.output<T>) => string = (x) => JSON.stringify(x)) =>
  z
    .array(item, { error: `must be an array of ${what}` })
    .max(max, `at most ${max} ${what}`)
    .refine((xs) => new Set(xs.map(key)).size === xs.length, `${what} must be unique`);

/** Query-string integers ("3") and JSON integers (3) alike, in [min, max]. */
export const intParam = (min: number, max: number | undefined, dflt: number) => {
  const range = max === undefined ? `at least ${min}` : `from ${min} to ${max}`;
  let n = z.int({ error: `must be an integer ${range}` }).min(min, `must be an integer ${range}`);
  if (max !== undefined) n = n.max(max, `must be an integer ${range}`);
  return z
    .preprocess((v) => (typeof v === "string" && /^-?\d+$/.test(v) ? Number(v) : v), n)
    .optional()
    .transform((v) => v ?? dflt);
};

export const tagOut = z.object({ id: z.string(), name: z.string(), color: z.string() });
export type TagOut = z.infer<typeof tagOut>;

export const envelope = <T extends z.ZodTypeAny>(item: T) =>
  z.object({ pageCount: z.int(), pageSize: z.int(), totalCount: z.int(), results: z.array(item) });

export interface Envelope<T> {
  pageCount: number;
  pageSize: number;
  totalCount: number;
  results: T[];
}
