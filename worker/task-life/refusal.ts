import { ApiError, type ErrorCode } from "../errors.js";

/** An admission refusal as data: an ApiError does not survive a Durable Object RPC, its fields do. */
export interface Refusal {
  code: ErrorCode;
  message: string;
  headers?: Record<string, string>;
}

export const refusalOf = (e: ApiError): Refusal => ({ code: e.code, message: e.message, ...(e.headers ? { headers: e.headers } : {}) });
export const refusalError = (r: Refusal) => new ApiError(r.code, r.message, undefined, r.headers);
