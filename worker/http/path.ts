import { getPath } from "hono/utils/url";

/** The request's path with one trailing slash taken off (the root stays "/"). */
export function withoutTrailingSlash(request: Request): string {
  const path = getPath(request);
  return path.length > 1 && path.endsWith("/") ? path.slice(0, -1) : path;
}
