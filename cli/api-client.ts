import { cmd } from "./cli-name.js";
import { hintFor, withoutRoutes } from "./error-hints.js";
import { ApiError, CliError, type ErrorDetail } from "./errors.js";

export type QueryValue = string | number | boolean | undefined | null | readonly string[];

export interface RequestOptions {
  query?: Record<string, QueryValue> | URLSearchParams;
  /** Sent as `application/json`. */
  json?: unknown;
  /** Sent as is, with `contentType`. */
  body?: Uint8Array;
  contentType?: string;
  headers?: Record<string, string>;
}

const USER_AGENT = "gcfaas-cli/0.1";

/** A thin client of the service's HTTP API: one method per request shape, errors as `ApiError`. */
export class ApiClient {
  constructor(
    readonly baseUrl: string,
    private readonly token: string,
  ) {}

  url(p: string, query?: RequestOptions["query"]): string {
    const u = new URL(this.baseUrl + p);
    if (query instanceof URLSearchParams) {
      for (const [k, v] of query) u.searchParams.append(k, v);
    } else if (query) {
      for (const [k, v] of Object.entries(query)) {
        if (v === undefined || v === null) continue;
        if (Array.isArray(v)) for (const item of v) u.searchParams.append(k, item);
        else u.searchParams.set(k, String(v));
      }
    }
    return u.toString();
  }

  /** The raw response; only connection failures throw. */
  async raw(method: string, p: string, o: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { "user-agent": USER_AGENT, ...o.headers, authorization: `Bearer ${this.token}` };
    let body: string | Uint8Array | undefined;
    if (o.json !== undefined) {
      body = JSON.stringify(o.json);
      headers["content-type"] = "application/json";
    } else if (o.body !== undefined) {
      body = o.body;
      headers["content-type"] = o.contentType ?? "application/octet-stream";
    }
    try {
      return await fetch(this.url(p, o.query), { method, headers, body });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      const why = cause?.code ?? cause?.message ?? (err as Error).message;
      throw new CliError("connection_failed", `cannot reach ${this.baseUrl} (${why})`, [], 1, `is the service running? check the URL with \`${cmd("config")}\``);
    }
  }

  /** JSON answer (or `undefined` for an empty one); any non-2xx status throws its `ApiError`. */
  async call<T = unknown>(method: string, p: string, o: RequestOptions = {}): Promise<T> {
    const res = await this.raw(method, p, o);
    const text = await res.text();
    if (!res.ok) throw errorFromResponse(res, text);
    if (!text) return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new CliError("bad_response", `${method} ${p} answered ${res.status} with a body that is not JSON: ${text.slice(0, 200)}`);
    }
  }

  get<T = unknown>(p: string, query?: RequestOptions["query"]): Promise<T> {
    return this.call<T>("GET", p, query ? { query } : {});
  }
}

/** Reads the service's error body; anything else (a proxy's HTML page, ...) gets a code `http_<status>`. */
export function errorFromResponse(res: Response, text: string): ApiError {
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; details?: unknown } };
    const e = body.error;
    if (e && typeof e.code === "string") {
      const details = Array.isArray(e.details)
        ? (e.details as unknown[]).flatMap((d): ErrorDetail[] => {
            const x = d as { field?: unknown; message?: unknown };
            return typeof x?.message === "string" ? [{ field: typeof x.field === "string" ? x.field : "", message: x.message }] : [];
          })
        : [];
      return new ApiError(res.status, e.code, typeof e.message === "string" ? withoutRoutes(e.message) : res.statusText, details, hintFor(e.code));
    }
  } catch {
    /* not JSON */
  }
  const snippet = text.trim().replace(/\s+/g, " ").slice(0, 200);
  return new ApiError(res.status, `http_${res.status}`, snippet || res.statusText || `status ${res.status}`);
}
