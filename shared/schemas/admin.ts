import { z } from "zod";
import { tagName } from "./common.js";

export const accountCreate = z.strictObject({ name: tagName });
export const agentTokenCreate = z.strictObject({ name: tagName.optional() });
