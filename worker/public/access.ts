import { ApiError } from "../errors.js";
import type { EndpointRow } from "../services/endpoints.js";
import { localMinutes, withinWindow } from "../../shared/time/local-time.js";

const DEFAULT_PORTS: Record<string, string> = { "https:": "443", "http:": "80" };

/** scheme://host[:port], lowercased, default port dropped; undefined when not an origin. */
export function normalizeOrigin(value: string): string | undefined {
  try {
    const u = new URL(value);
    if (!u.hostname) return undefined;
    const port = u.port && u.port !== DEFAULT_PORTS[u.protocol] ? `:${u.port}` : "";
    return `${u.protocol}//${u.hostname.toLowerCase()}${port}`;
  } catch {
    return undefined;
  }
}

export function originAllowed(e: Pick<EndpointRow, "origin">, origin: string | null | undefined): boolean {
  if (!e.origin.length) return true;
  const o = origin ? normalizeOrigin(origin) : undefined;
  return !!o && e.origin.some((allowed) => normalizeOrigin(allowed) === o);
}

export const ipAllowed = (e: Pick<EndpointRow, "ip">, ip: string | null | undefined) => !e.ip.length || (!!ip && e.ip.includes(ip));

/** The day and time-window checks use the endpoint's zone, or UTC without a window. */
export const zoneOf = (e: Pick<EndpointRow, "timezone">) => e.timezone ?? "UTC";

export function inTimeWindow(e: Pick<EndpointRow, "timeFrom" | "timeTo" | "timezone">, now: number): boolean {
  if (!e.timeFrom || !e.timeTo || !e.timezone) return true;
  return withinWindow(localMinutes(now, e.timezone), e.timeFrom, e.timeTo);
}

/** The decisions' order after existence and pause: ip, origin, time window. */
export function checkAccess(e: EndpointRow, req: { ip: string | null; origin: string | null }, now: number): void {
  if (!ipAllowed(e, req.ip)) throw new ApiError("ip_not_allowed", "this endpoint does not accept calls from your address");
  if (!originAllowed(e, req.origin)) throw new ApiError("origin_not_allowed", req.origin ? `origin ${req.origin} is not allowed` : "this endpoint requires an allowed Origin header");
  if (!inTimeWindow(e, now))
    throw new ApiError("outside_time_window", `this endpoint accepts calls from ${e.timeFrom} to ${e.timeTo} (${e.timezone})`);
}

/** CORS headers for an allowed origin (none for callers without Origin). */
export function corsHeaders(e: Pick<EndpointRow, "origin">, origin: string | null): Record<string, string> {
  if (!origin || !originAllowed(e, origin)) return {};
  // Web apps read the task id of a synchronous call, the state of a pending result, and whether a call was replayed.
  return { "Access-Control-Allow-Origin": origin, "Access-Control-Expose-Headers": "X-Task-Id, X-Task-Status, Location, Preference-Applied, Retry-After, Idempotent-Replayed", Vary: "Origin" };
}
