import { z } from "zod";
import { tagName } from "./common.js";

export const accountCreate = z.strictObject({ name: tagName });
export const agentTokenCreate = z.strictObject({ name: tagName.optional() });

export const accountEdit = z.strictObject({ plan: z.string().regex(/^[A-Z0-9_]{1,32}$/, "must be a plan id such as DEVELOPER") });
