import { z } from "zod";

export const MAX_CONCURRENCY = 1000;

/** A function's cap on its tasks running at once, fleet-wide; null: none beyond the account's. Also the PUT body. */
export const concurrencySet = z.strictObject({
  max: z.int({ error: "must be an integer from 1 to 1000, or null" }).min(1, "must be from 1 to 1000").max(MAX_CONCURRENCY, "must be from 1 to 1000").nullable(),
});
export type ConcurrencyCap = z.output<typeof concurrencySet>;
