import type { Middleware } from "openapi-fetch";
import { createClient, type GcfaasClient } from "../client/index.js";
import { cmd } from "./cli-name.js";
import { hintFor, withoutRoutes } from "./error-hints.js";
import { ApiError, CliError, type ErrorDetail } from "./errors.js";

/**
 * The CLI's client: the typed client (client/index.ts, generated from the OpenAPI document) with
 * what the document cannot know: where the service is, a connection failure told as a hint, and
 * error answers turned into `ApiError`s the CLI prints.
 */
export type ApiClient = GcfaasClient & { readonly baseUrl: string };

const USER_AGENT = "gcfaas-cli/0.1";

export function apiClient(baseUrl: string, token: string): ApiClient {
  const client = createClient({ baseUrl, token, userAgent: USER_AGENT });
  client.use({ onError: ({ error }) => connectionFailed(baseUrl, error) });
  return Object.assign(client, { baseUrl });
}

function connectionFailed(baseUrl: string, err: unknown): CliError {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  const why = cause?.code ?? cause?.message ?? (err as Error).message;
  return new CliError("connection_failed", `cannot reach ${baseUrl} (${why})`, [], 1, `is the service running? check the URL with \`${cmd("config")}\``);
}

interface Answered {
  data?: unknown;
  error?: unknown;
  response: Response;
}

/** What a call answers on success, as the document types it. */
export type Ok<R extends Answered> = R extends { error?: never } ? R["data"] : never;

/** The answer's data (`undefined` for an empty one); an error answer throws its `ApiError`. */
export async function ok<R extends Answered>(call: Promise<R>): Promise<Ok<R>> {
  let r: R;
  try {
    r = await call;
  } catch (err) {
    // openapi-fetch parses a success body as JSON; a proxy's HTML page is not the service's answer.
    if (err instanceof SyntaxError) throw new CliError("bad_response", `the service answered with a body that is not JSON (${err.message})`);
    throw err;
  }
  if (!r.response.ok) throw apiError(r.response, r.error);
  return r.data as Ok<R>;
}

/** Request options that read an answer as text and keep it, whatever its status (see exchange). */
export interface AsItCame {
  parseAs: "text";
  middleware: Middleware[];
}

/**
 * The answer as it came, its body as text, whatever its status: for operations that answer with
 * the function's own response (a result, a synchronous task), which no schema can describe.
 * `call` spreads `raw` into its request options.
 */
export async function exchange(call: (raw: AsItCame) => Promise<Answered>): Promise<{ response: Response; text: string }> {
  let text: Promise<string> | undefined;
  const keep: Middleware = {
    onResponse({ response }) {
      text = response.clone().text();
    },
  };
  const { response } = await call({ parseAs: "text", middleware: [keep] });
  return { response, text: (await text) ?? "" };
}

/**
 * Reads the service's error body (as openapi-fetch hands it: parsed JSON, else text); anything
 * else (a proxy's HTML page, ...) gets a code `http_<status>`.
 */
export function apiError(res: Response, body: unknown): ApiError {
  const e = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } } | null)?.error;
  if (e && typeof e.code === "string") {
    const details = Array.isArray(e.details)
      ? (e.details as unknown[]).flatMap((d): ErrorDetail[] => {
          const x = d as { field?: unknown; message?: unknown };
          return typeof x?.message === "string" ? [{ field: typeof x.field === "string" ? x.field : "", message: x.message }] : [];
        })
      : [];
    return new ApiError(res.status, e.code, typeof e.message === "string" ? withoutRoutes(e.message) : res.statusText, details, hintFor(e.code));
  }
  const text = typeof body === "string" ? body : body === undefined ? "" : JSON.stringify(body);
  const snippet = text.trim().replace(/\s+/g, " ").slice(0, 200);
  return new ApiError(res.status, `http_${res.status}`, snippet || res.statusText || `status ${res.status}`);
}

/** The same for an answer read as text (a stream's opening answer, an exchange). */
export function apiErrorOf(res: Response, text: string): ApiError {
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    /* not JSON: the text is the message */
  }
  return apiError(res, body);
}
