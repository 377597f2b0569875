import { z } from "zod";
import { recordId } from "./common.js";

/** A canary's share of new tasks, in percent: 0 and 100 would be no canary and a pin. */
export const canaryWeight = z.int({ error: "must be an integer from 1 to 99" }).min(1, "must be from 1 to 99").max(99, "must be from 1 to 99");

export const canarySet = z.strictObject({ buildId: recordId, weight: canaryWeight });

/**
 * PUT /v1/function/<id>/release: the whole release. `buildId` pins a build (null follows the
 * newest successful one); `canary`, when present and not null, sends `weight` percent of new tasks
 * to a second build. Absent, the canary is removed, as a PUT replaces.
 */
export const releaseSet = z
  .strictObject({
    buildId: recordId.nullable(),
    canary: canarySet.nullable().optional(),
  })
  .refine((r) => !r.canary || r.canary.buildId !== r.buildId, { message: "must differ from the pinned build", path: ["canary", "buildId"] });
export type ReleaseSet = z.output<typeof releaseSet>;

/** GET /v1/function/<id>/release: the build that runs now (null before any), pinned or following the newest. */
export const releaseOut = z.object({
  buildId: z.string().nullable(),
  pinned: z.boolean(),
  canary: z.object({ buildId: z.string(), weight: z.int() }).nullable(),
});
export type Release = z.infer<typeof releaseOut>;
