import { z } from "zod";
import { intParam, printableAscii, recordId, tagRefs } from "./common.js";

const httpStatus = z
  .int({ error: "must be an HTTP status code from 100 to 599" })
  .min(100, "must be an HTTP status code from 100 to 599")
  .max(599, "must be an HTTP status code from 100 to 599");

export const triggerCreate = z.strictObject({
  functionId: recordId,
  nextId: recordId,
  status: httpStatus.default(200),
  tag: tagRefs.optional(),
  includeResult: z.boolean({ error: "is required and must be a boolean" }),
  description: printableAscii(256).optional(),
});
export type TriggerCreate = z.infer<typeof triggerCreate>;

const notEditable = z.unknown().meta({ readOnly: true, description: "Set at creation: sending it answers 400." }).optional();

export const triggerEdit = z
  .strictObject({
    tag: tagRefs.optional(),
    status: httpStatus.optional(),
    includeResult: z.boolean({ error: "must be a boolean" }).optional(),
    description: printableAscii(256).optional(),
    functionId: notEditable,
    nextId: notEditable,
  })
  .superRefine((v, ctx) => {
    for (const field of ["functionId", "nextId"] as const)
      if (v[field] !== undefined)
        ctx.addIssue({ code: "custom", path: [field], message: "is set at creation and cannot be edited" });
  })
  .transform(({ functionId: _f, nextId: _n, ...rest }) => rest);
export type TriggerEdit = z.infer<typeof triggerEdit>;

export const triggerListFilter = z.strictObject({
  page: intParam(1, undefined, 1),
  limit: intParam(3, 20, 10),
  functionId: recordId.optional(),
});
