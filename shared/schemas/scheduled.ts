import { z } from "zod";
import { intParam, printableAscii, recordId } from "./common.js";
import { isTimeZone } from "./endpoint.js";
import { CronError, parseCron } from "../time/cron.js";

/** A standard five-field cron expression; the message names the field that is wrong. */
export const cronExpression = z
  .string({ error: "must be a cron expression of five fields" })
  .max(200, "at most 200 characters")
  .check((ctx) => {
    try {
      parseCron(ctx.value);
    } catch (e) {
      if (!(e instanceof CronError)) throw e;
      ctx.issues.push({ code: "custom", input: ctx.value, message: e.message });
    }
  })
  // The parser's rules are not JSON Schema: the OpenAPI document shows examples instead.
  .meta({ examples: ["0 9 * * 1-5", "*/15 * * * *"] });

/** An IANA zone name that the runtime knows (Intl throws RangeError for any other). */
export const timeZoneName = z
  .string({ error: "must be an IANA time-zone name" })
  .max(64, "at most 64 characters")
  .refine(isTimeZone, "must be an IANA time-zone name such as Europe/Paris")
  .meta({ examples: ["UTC", "Europe/Paris"] });

export const scheduledCreate = z.strictObject({
  functionId: recordId,
  cron: cronExpression,
  timezone: timeZoneName,
  description: printableAscii(256).optional(),
});
export type ScheduledCreate = z.infer<typeof scheduledCreate>;

/** The draft marks active, cron and timezone required: an edit states the whole schedule. */
export const scheduledEdit = z.strictObject({
  active: z.boolean({ error: "is required and must be a boolean" }),
  cron: cronExpression,
  timezone: timeZoneName,
  description: printableAscii(256).optional(),
});
export type ScheduledEdit = z.infer<typeof scheduledEdit>;

export const scheduledListFilter = z.strictObject({
  page: intParam(1, undefined, 1),
  limit: intParam(3, 999, 10),
  functionId: recordId.optional(),
  timezone: timeZoneName.optional(),
});
export type ScheduledListFilter = z.infer<typeof scheduledListFilter>;
