import { call, callJson, consolePage } from "./helpers.js";

/**
 * What the read routes answer, as a caller sees them: tests that move records from one store to
 * another (task-history.test.ts, shard-archive-reads.test.ts) compare them before and after.
 */

/** What every read route answers for these tasks, as a caller sees it. */
export async function reads(token: string, ids: string[], fn: string) {
  const out = await recordReads(token, ids, fn);
  out.consoleUsage = await consolePage("/console/usage", token);
  out.usage = await callJson("/v1/usage", 200, { token });
  out.metrics = (await callJson(`/v1/function/${fn}`, 200, { token })).metrics;
  out.platform = (({ completedTasks, pendingTasks }) => ({ completedTasks, pendingTasks }))(await callJson("/v1/metrics", 200, { token }));
  return out;
}

/** What the routes that read records answer for these tasks (by id, the lists and the console's runs), without the counts. */
export async function recordReads(token: string, ids: string[], fn: string) {
  const out: Record<string, unknown> = {};
  for (const id of ids) {
    const result = await call(`/v1/task/${id}/result`, { token });
    out[id] = {
      task: await callJson(`/v1/task/${id}`, 200, { token }),
      result: { status: result.status, type: result.headers.get("content-type"), body: await result.text() },
      log: await callJson(`/v1/task/${id}/log`, 200, { token }),
      console: await consolePage(`/console/tasks/${id}`, token),
    };
  }
  out.consoleRuns = await consolePage("/console/tasks", token);
  out.list = await callJson("/v1/task/list", 200, { token });
  out.functionList = await callJson(`/v1/task/list?functionId=${fn}`, 200, { token });
  out.pages = await allPages(token, 2);
  return out;
}

/** Every page of the account's task list, `limit` at a time, following `before`. */
export async function allPages(token: string, limit: number, functionId?: string) {
  const pages: { id: string }[][] = [];
  let before: string | undefined;
  for (;;) {
    const qs = new URLSearchParams({ limit: String(limit), ...(before ? { before } : {}), ...(functionId ? { functionId } : {}) });
    const page = await callJson<{ id: string }[]>(`/v1/task/list?${qs}`, 200, { token });
    if (!page.length) return pages;
    pages.push(page);
    before = page.at(-1)!.id;
  }
}

