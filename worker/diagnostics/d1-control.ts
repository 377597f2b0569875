import type { Bindings } from "../env.js";
import { secretEquals } from "../lib/ids.js";
import { bearer } from "../middleware/auth.js";
import { closeFailureWindow, delayMsOf, openFailureWindow, troubleState, type FailureMode } from "../db/d1-trouble.js";

type Fetch = (req: Request, env: Bindings, ctx: ExecutionContext) => Response | Promise<Response>;

/** The longest failure window one request may open (an hour): a test's typo must not leave D1 down for a day. */
const MAX_WINDOW_MS = 3_600_000;
const MODES: FailureMode[] = ["refuse", "lose_answer"];

/**
 * The test control of D1 failures (worker/db/d1-trouble.ts), only with the binding
 * D1_TEST_FAILURES = "1" (scripts/lib/serve-worker.ts sets it from GCFAAS_TEST_D1_FAILURES=1 for
 * LocalWorker's tests; never in wrangler.toml). Operator only, as the cost counters are:
 * - `POST /__test/d1?failForMs=N[&mode=refuse|lose_answer][&after=K]` opens a window of N ms from
 *   now, whose failures begin after K more round trips went through (D1 lost mid-request);
 * - `DELETE /__test/d1` closes it;
 * - `GET /__test/d1` answers the state: whether D1 is failing, until when, how many round trips
 *   the window failed, and how many round trips the delay held back.
 * Without the binding the path is an ordinary unknown route.
 */
export function withD1Control(fetch: Fetch): Fetch {
  return (req, env, ctx) => {
    if (env.D1_TEST_FAILURES !== "1") return fetch(req, env, ctx);
    const url = new URL(req.url);
    if (url.pathname !== "/__test/d1") return fetch(req, env, ctx);
    return control(req, url, env);
  };
}

const answer = (status: number, body: unknown) => Response.json(body, { status });
const refused = (message: string) => answer(400, { error: { code: "validation_failed", message } });

async function control(req: Request, url: URL, env: Bindings): Promise<Response> {
  const raw = bearer(req.headers.get("authorization") ?? undefined);
  if (!raw || !env.ADMIN_TOKEN || !(await secretEquals(raw, env.ADMIN_TOKEN))) return answer(401, { error: { code: "unauthorized", message: "the admin token is required" } });
  const state = () => ({ ...troubleState(), delayMs: delayMsOf(env.D1_DELAY_MS) });
  if (req.method === "GET") return answer(200, state());
  if (req.method === "DELETE") {
    closeFailureWindow();
    return answer(200, state());
  }
  if (req.method !== "POST") return answer(405, { error: { code: "method_not_allowed", message: "use GET, POST or DELETE" } });
  const ms = url.searchParams.get("failForMs") ?? "";
  if (!/^\d+$/.test(ms) || Number(ms) > MAX_WINDOW_MS) return refused(`failForMs must be a whole number of milliseconds from 0 to ${MAX_WINDOW_MS}, not ${JSON.stringify(ms)}`);
  const mode = (url.searchParams.get("mode") ?? "refuse") as FailureMode;
  if (!MODES.includes(mode)) return refused(`mode must be one of ${MODES.join(", ")}, not ${JSON.stringify(mode)}`);
  const after = url.searchParams.get("after") ?? "0";
  if (!/^\d+$/.test(after) || Number(after) > 1000) return refused(`after must be a whole number of round trips from 0 to 1000, not ${JSON.stringify(after)}`);
  openFailureWindow(Number(ms), mode, Number(after));
  return answer(200, state());
}
