import { z } from "zod";
import { hexColor, tagName } from "./common.js";

export const DEFAULT_TAG_COLOR = "#808080";

export const tagCreate = z.strictObject({ name: tagName, color: hexColor.optional() });
export const tagEdit = z.strictObject({ name: tagName.optional(), color: hexColor.optional() });
export type TagCreate = z.infer<typeof tagCreate>;
export type TagEdit = z.infer<typeof tagEdit>;
