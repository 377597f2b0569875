import { z } from "zod";
import { tagName } from "./common.js";
import { nodeId } from "../protocol/messages.js";
import { accountLimits, accountLimitsPatch } from "./limits.js";

export const accountCreate = z.strictObject({ name: tagName });
/** An agent token speaks for one node: the id its agent must say in its hello. */
export const agentTokenCreate = z.strictObject({ nodeId, name: tagName.optional() });

/** Any subset of the account's operator settings. */
export const accountEdit = z
  .strictObject({
    plan: z.string().regex(/^[A-Z0-9_]{1,32}$/, "must be a plan id such as DEVELOPER").meta({ examples: ["DEVELOPER"] }).optional(),
    privileged: z
      .boolean({ error: "must be a boolean" })
      .describe("The grant to run privileged functions (off by default); false revokes it and ends the account's privileged tasks in flight with status 403")
      .optional(),
    egress: z
      .boolean({ error: "must be a boolean" })
      .describe('The grant to let functions reach the network (off by default); false revokes it: the account\'s functions go back to egress "none" and its egress tasks in flight end with status 403')
      .optional(),
    limits: accountLimitsPatch.optional(),
  })
  .refine((o) => Object.keys(o).length > 0, "must change at least one setting");

/** GET /v1/admin/accounts/<id>: the account, its grant and the limits that apply to it now. */
export const accountView = z.object({ id: z.string(), name: z.string(), plan: z.string(), privileged: z.boolean(), egress: z.boolean(), createdAt: z.string(), limits: accountLimits });
