import type { Context } from "hono";
import type { AppEnv, Bindings } from "../env.js";

/** The Worker's own fetch (the /v1 API), handed to the console when the app is built. */
export type ApiFetch = (request: Request, env: Bindings, ctx: Context<AppEnv>["executionCtx"]) => Response | Promise<Response>;

export interface ApiError {
  code: string;
  message: string;
  details?: { field: string; message: string }[];
}

export type ApiResult<T> = { ok: true; status: number; data: T; res: Response } | { ok: false; status: number; error: ApiError };

/**
 * Calls the /v1 API in process with the session's token: every rule, refusal and message the API
 * has, the console has, and there is no second copy of any of them.
 */
export class ConsoleApi {
  constructor(
    private readonly apiFetch: ApiFetch,
    private readonly c: Context<AppEnv>,
    private readonly token: string,
  ) {}

  async raw(method: string, path: string, o: { json?: unknown; body?: BodyInit | null; headers?: Record<string, string> } = {}): Promise<Response> {
    const headers = new Headers(o.headers);
    headers.set("authorization", `Bearer ${this.token}`);
    let body: BodyInit | null | undefined = o.body;
    if (o.json !== undefined) {
      body = JSON.stringify(o.json);
      headers.set("content-type", "application/json");
    }
    const url = new URL(path, new URL(this.c.req.url).origin);
    return await this.apiFetch(new Request(url, { method, headers, body: body ?? null }), this.c.env, this.c.executionCtx);
  }

  async call<T = unknown>(method: string, path: string, o: { json?: unknown; body?: BodyInit | null; headers?: Record<string, string> } = {}): Promise<ApiResult<T>> {
    const res = await this.raw(method, path, o);
    const text = await res.text();
    if (!res.ok) return { ok: false, status: res.status, error: errorOf(res, text) };
    return { ok: true, status: res.status, data: (text ? JSON.parse(text) : undefined) as T, res };
  }

  /** A read of a text resource (a build's whole log) that must succeed. */
  async text(path: string): Promise<string> {
    const res = await this.raw("GET", path);
    const text = await res.text();
    if (!res.ok) throw new ConsoleError(res.status, errorOf(res, text));
    return text;
  }

  /** A read that must succeed (the record is the caller's): a refusal becomes the page's error. */
  async get<T>(path: string): Promise<T> {
    const r = await this.call<T>("GET", path);
    if (!r.ok) throw new ConsoleError(r.status, r.error);
    return r.data;
  }
}

/** A failed API read shown as the console's error page with the API's own status and message. */
export class ConsoleError extends Error {
  constructor(
    readonly status: number,
    readonly error: ApiError,
  ) {
    super(error.message);
  }
}

function errorOf(res: Response, text: string): ApiError {
  try {
    const error = (JSON.parse(text) as { error?: ApiError }).error;
    if (error) return error;
  } catch {
    /* not the API's error body */
  }
  return { code: "error", message: `the API answered ${res.status}` };
}
