import { z } from "zod";
import { intParam, recordId } from "./common.js";

export const BUILD_STATUSES = ["PENDING", "BUILDING", "SUCCESS", "FAILED"] as const;
export type BuildStatus = (typeof BUILD_STATUSES)[number];
export const ARCHS = ["amd64"] as const;

export const MAX_ZIP_BYTES = 50 * 1024 * 1024;

export const buildCreateQuery = z.strictObject({
  arch: z.literal("amd64", { error: "is required and the only accepted architecture is amd64" }),
});

export const buildListQuery = z.strictObject({
  page: intParam(1, undefined, 1),
  limit: intParam(1, 100, 1),
  functionId: recordId.optional(),
});

export const timelineEntry = z.object({ status: z.enum(BUILD_STATUSES), time: z.string() });
export type TimelineEntry = z.infer<typeof timelineEntry>;
