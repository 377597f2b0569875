import type { TaskInput } from "../../shared/schemas/task.js";
import type { TaskBody } from "./task-body.js";

/**
 * Headers a function never sees: credentials of the caller, the edge's own, and GC-Storage (only
 * the function's own stored value arrives under that name).
 */
const HIDDEN_HEADERS = /^(authorization|cookie|cf-.*|x-forwarded-.*|x-real-ip|gc-storage)$/i;

/** A query string as a task's `query`: a repeated parameter becomes an array. */
export function queryRecord(params: URLSearchParams): TaskInput["query"] {
  const query: Record<string, string | string[]> = {};
  for (const key of new Set(params.keys())) {
    const all = params.getAll(key);
    query[key] = all.length === 1 ? all[0]! : all;
  }
  return query;
}

export function inputFromRequest(req: Request, body: TaskBody): TaskInput {
  const query = queryRecord(new URL(req.url).searchParams);
  const headers: Record<string, string> = {};
  req.headers.forEach((value, key) => {
    if (!HIDDEN_HEADERS.test(key)) headers[key] = value;
  });
  return { method: req.method, query, headers, ...body };
}
