import type { ContentfulStatusCode } from "hono/utils/http-status";

export const ERROR_STATUS = {
  invalid_json: 400,
  validation_failed: 400,
  unauthorized: 401,
  forbidden: 403,
  ip_not_allowed: 403,
  origin_not_allowed: 403,
  outside_time_window: 403,
  privileged_not_allowed: 403,
  egress_not_allowed: 403,
  not_found: 404,
  result_not_ready: 404,
  method_not_allowed: 405,
  invalid_signature: 400,
  quota_exhausted: 402,
  no_successful_build: 409,
  build_not_ready: 409,
  no_previous_build: 409,
  conflict: 409,
  idempotency_conflict: 409,
  name_taken: 409,
  expired: 410,
  length_required: 411,
  payload_too_large: 413,
  unsupported_media_type: 415,
  daily_limit_reached: 429,
  too_many_pending_tasks: 429,
  limit_reached: 429,
  internal_error: 500,
  function_paused: 503,
  storage_unavailable: 503,
} as const satisfies Record<string, ContentfulStatusCode>;

export type ErrorCode = keyof typeof ERROR_STATUS;

export interface ErrorDetail {
  field: string;
  message: string;
}

/** The one error type routes throw; `app.onError` turns it into the one error body. */
export class ApiError extends Error {
  readonly status: ContentfulStatusCode;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: ErrorDetail[],
    readonly headers?: Record<string, string>,
  ) {
    super(message);
    this.status = ERROR_STATUS[code];
  }

  body() {
    return { error: { code: this.code, message: this.message, ...(this.details?.length ? { details: this.details } : {}) } };
  }
}

export const notFound = (what: string) => new ApiError("not_found", `${what} not found`);

export const validationFailed = (details: ErrorDetail[]) =>
  new ApiError("validation_failed", details.length === 1 ? `${details[0]!.field} ${details[0]!.message}` : "the request is not valid", details);
