/**
 * The typed client of the gcfaas HTTP API: openapi-fetch over the types openapi-typescript
 * generates from the service's own OpenAPI document (client/schema.d.ts, `npm run gen:client`).
 * Paths, parameters, bodies and answers are checked by the compiler against that document.
 *
 *   import { createClient } from "gc-faas/client";
 *   const api = createClient({ baseUrl: "http://127.0.0.1:8787", token });
 *   const { data, error } = await api.GET("/v1/function/{id}", { params: { path: { id } } });
 */
import createFetchClient, { type Client, type Middleware } from "openapi-fetch";
import type { components, operations, paths } from "./schema.js";

export type { components, operations, paths };

export interface ClientOptions {
  /** The service's base URL, e.g. `http://127.0.0.1:8787` (no `/v1`: the paths carry it). */
  baseUrl: string;
  /** An account token (or the operator's for `/v1/admin/...`); sent as `Authorization: Bearer` on every request. */
  token?: string;
  /** Sent as `User-Agent`; the service's logs show it. */
  userAgent?: string;
  /** A fetch to use instead of the global one (tests, proxies, retries). */
  fetch?: (request: Request) => Promise<Response>;
}

/** Answers are typed by their JSON content; a stream or text is read with `parseAs`. */
export type GcfaasClient = Client<paths, "application/json">;

/** A JSON schema of the document by name (today only `Error`, the one error body). */
export type Schema<N extends keyof components["schemas"]> = components["schemas"][N];

/** The JSON body an operation answers with on its success status, by path and method. */
export type Answer<P extends keyof paths, M extends keyof paths[P] & ("get" | "post" | "put" | "patch" | "delete")> = paths[P][M] extends {
  responses: infer R;
}
  ? {
      [S in keyof R]: S extends 200 | 201 ? (R[S] extends { content: { "application/json": infer B } } ? B : never) : never;
    }[keyof R]
  : never;

const DEFAULT_USER_AGENT = "gc-faas-client/0.1";

/** Adds who is calling to every request: the token always, the user agent unless the request names one. */
function identify(token: string | undefined, userAgent: string): Middleware {
  return {
    onRequest({ request }) {
      if (!request.headers.has("user-agent")) request.headers.set("user-agent", userAgent);
      if (token !== undefined) request.headers.set("authorization", `Bearer ${token}`);
      return request;
    },
  };
}

/** A client of the service at `baseUrl`: `GET`, `POST`, `PUT`, `PATCH`, `DELETE` by documented path. */
export function createClient(o: ClientOptions): GcfaasClient {
  const client = createFetchClient<paths, "application/json">({ baseUrl: o.baseUrl, ...(o.fetch ? { fetch: o.fetch } : {}) });
  client.use(identify(o.token, o.userAgent ?? DEFAULT_USER_AGENT));
  return client;
}
